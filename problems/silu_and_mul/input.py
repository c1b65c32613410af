"""Inputs for silu_and_mul: a gate_up projection output, gate half ~ N(0, 2^2) (so silu covers its negative
dip and its linear regime), up half ~ N(0, 1)."""

import torch


def _make_inputs(num_tokens: int, intermediate_size: int, dtype: str = "bfloat16", device: str = "cuda"):
    dt = getattr(torch, dtype)
    gate = 2.0 * torch.randn(num_tokens, intermediate_size, device=device)
    up = torch.randn(num_tokens, intermediate_size, device=device)
    x = torch.cat([gate, up], dim=-1).to(dt)
    return {"x": x}
