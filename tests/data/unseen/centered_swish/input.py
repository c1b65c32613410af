"""Inputs: activations ~ N(0, 2) as [rows, cols]."""

import torch


def _make_inputs(rows: int, cols: int, dtype: str = "float16", device: str = "cpu"):
    return {"x": (2.0 * torch.randn(rows, cols, device=device)).to(getattr(torch, dtype))}
