"""Inputs for gated_rms_norm: x ~ N(0, 1) (mixer output), gate z ~ N(0, 1.5^2) (so silu sees both signs and
saturation), per-channel weight around 1."""

import torch


def _make_inputs(num_tokens: int, hidden_size: int, dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    x = torch.randn(num_tokens, hidden_size, device=device).to(dt)
    z = (1.5 * torch.randn(num_tokens, hidden_size, device=device)).to(dt)
    weight = (1.0 + 0.25 * torch.randn(hidden_size, device=device)).to(dt)
    return {"x": x, "z": z, "weight": weight}
