"""Inputs: hidden states ~ N(0, 1) as [batch, seq, width] and a per-channel scale around 1."""

import torch


def _make_inputs(batch: int, seq: int, width: int, dtype: str = "float16", device: str = "cpu"):
    dt = getattr(torch, dtype)
    hidden_states = torch.randn(batch, seq, width, device=device).to(dt)
    gamma = (1.0 + 0.2 * torch.randn(width, device=device)).to(dt)
    return {"hidden_states": hidden_states, "gamma": gamma}
