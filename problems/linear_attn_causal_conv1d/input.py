"""Inputs for linear_attn_causal_conv1d: activations ~N(0, 1); weight and bias ~U(-1/sqrt(width),
1/sqrt(width)) (PyTorch's default Conv1d init for a depthwise filter, fan_in = width)."""

import torch


def _make_inputs(batch: int, dim: int, seqlen: int, width: int = 4, dtype: str = "bfloat16",
                 device: str = "cuda") -> dict[str, torch.Tensor]:
    dt = getattr(torch, dtype)
    bound = width ** -0.5
    x = torch.randn(batch, dim, seqlen, device=device, dtype=dt)
    weight = ((torch.rand(dim, width, device=device) * 2 - 1) * bound).to(dt)
    bias = ((torch.rand(dim, device=device) * 2 - 1) * bound).to(dt)
    return {"x": x, "weight": weight, "bias": bias}
