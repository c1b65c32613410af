"""Inputs: activations ~ N(0, 2^2) [tokens, width]."""

import torch


def _make_inputs(tokens: int, width: int, dtype: str = "bfloat16", device: str = "cpu"):
    return {"activations": (torch.randn(tokens, width, device=device) * 2).to(getattr(torch, dtype))}
