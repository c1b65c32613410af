"""Inputs for quant_fp8_per_token: activations ~ N(0, 1) with ~1% outlier channels scaled x10 (the outliers
that make per-token dynamic scaling necessary) and a per-token magnitude spread."""

import torch


def _make_inputs(num_tokens: int, hidden_size: int, dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    col_scale = torch.where(torch.rand(hidden_size, device=device) < 0.01, 10.0, 1.0)
    row_scale = torch.exp(0.5 * torch.randn(num_tokens, 1, device=device))
    x = (torch.randn(num_tokens, hidden_size, device=device) * col_scale * row_scale).to(dt)
    return {"x": x}
