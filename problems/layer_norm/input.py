"""Inputs for layer_norm: hidden states with a per-token offset and a few large-magnitude channels (so the
mean subtraction matters), a weight around 1 and a small bias."""

import torch


def _make_inputs(num_tokens: int, hidden_size: int, dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    col_scale = torch.where(torch.rand(hidden_size, device=device) < 0.01, 8.0, 1.0)
    offset = 0.5 * torch.randn(num_tokens, 1, device=device)
    x = (torch.randn(num_tokens, hidden_size, device=device) * col_scale + offset).to(dt)
    weight = (1.0 + 0.25 * torch.randn(hidden_size, device=device)).to(dt)
    bias = (0.1 * torch.randn(hidden_size, device=device)).to(dt)
    return {"x": x, "weight": weight, "bias": bias}
