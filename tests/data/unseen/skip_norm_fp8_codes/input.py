"""Inputs: hidden states and a skip stream ~ N(0, 1) as [rows, width], and a per-channel gain around 1."""

import torch


def _make_inputs(rows: int, width: int, dtype: str = "bfloat16", device: str = "cpu"):
    dt = getattr(torch, dtype)
    hidden = torch.randn(rows, width, device=device).to(dt)
    skip = torch.randn(rows, width, device=device).to(dt)
    gamma = (1.0 + 0.2 * torch.randn(width, device=device)).to(dt)
    return {"hidden": hidden, "skip": skip, "gamma": gamma}
