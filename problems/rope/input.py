"""Inputs for rope: random positions (a batch of sequences at arbitrary offsets), q/k ~ N(0, 1), and the
standard cos/sin cache for the model's rope base, stored in the activation dtype as serving engines do."""

import torch


def _make_inputs(num_tokens: int, num_q_heads: int, num_kv_heads: int, head_size: int, rotary_dim: int,
                 max_position: int, base: float = 10000.0, dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    positions = torch.randint(0, max_position, (num_tokens,), device=device, dtype=torch.int64)
    q = torch.randn(num_tokens, num_q_heads, head_size, device=device).to(dt)
    k = torch.randn(num_tokens, num_kv_heads, head_size, device=device).to(dt)
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, device=device, dtype=torch.float64) / rotary_dim))
    t = torch.arange(max_position, device=device, dtype=torch.float64)
    freqs = torch.outer(t, inv_freq)
    cos_sin_cache = torch.cat([freqs.cos(), freqs.sin()], dim=-1).to(dt)
    return {"positions": positions, "q": q, "k": k, "cos_sin_cache": cos_sin_cache}
