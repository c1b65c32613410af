"""Inputs: q / k rows of heads * head_dim values ~ N(0, 1); per-dimension gains near 1."""

import torch


def _make_inputs(tokens: int, q_heads: int, kv_heads: int, head_dim: int, dtype: str = "bfloat16",
                 device: str = "cpu"):
    kind = getattr(torch, dtype)
    return {
        "query": torch.randn(tokens, q_heads * head_dim, device=device).to(kind),
        "key": torch.randn(tokens, kv_heads * head_dim, device=device).to(kind),
        "query_gain": (1 + 0.1 * torch.randn(head_dim, device=device)).to(kind),
        "key_gain": (1 + 0.1 * torch.randn(head_dim, device=device)).to(kind),
    }
