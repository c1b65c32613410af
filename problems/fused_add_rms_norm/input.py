"""Inputs for fused_add_rms_norm: a sub-layer output ~ N(0, 0.5^2), a residual stream ~ N(0, 1) with a few
large-magnitude channels, and a trained-looking per-channel weight (mean 1, spread 0.25)."""

import torch


def _make_inputs(num_tokens: int, hidden_size: int, dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    col_scale = torch.where(torch.rand(hidden_size, device=device) < 0.01, 8.0, 1.0)
    x = (0.5 * torch.randn(num_tokens, hidden_size, device=device)).to(dt)
    residual = (torch.randn(num_tokens, hidden_size, device=device) * col_scale).to(dt)
    weight = (1.0 + 0.25 * torch.randn(hidden_size, device=device)).to(dt)
    return {"x": x, "residual": residual, "weight": weight}
