"""Inputs for qk_head_norm: projected q/k with per-channel magnitude spread (keys of trained models have a few
large channels), and q/k norm weights with a wide spread around 1 as in trained Qwen3 checkpoints."""

import torch


def _make_inputs(num_tokens: int, num_q_heads: int, num_kv_heads: int, head_dim: int,
                 dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    chan = 0.5 + torch.rand(head_dim, device=device)  # per-channel magnitude in [0.5, 1.5)
    q = (torch.randn(num_tokens, num_q_heads, head_dim, device=device) * chan).to(dt)
    k = (2.0 * torch.randn(num_tokens, num_kv_heads, head_dim, device=device) * chan).to(dt)
    q_weight = (1.0 + 0.5 * torch.rand(head_dim, device=device)).to(dt)
    k_weight = (0.5 + torch.rand(head_dim, device=device)).to(dt)
    return {"q": q, "k": k, "q_weight": q_weight, "k_weight": k_weight}
