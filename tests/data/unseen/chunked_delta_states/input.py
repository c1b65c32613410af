"""Inputs: keys, w ~ N(0, 0.3^2) and u ~ N(0, 1) [batch, tokens, heads, dim]; g_cumsum, per-token log decays
in (-0.1, 0) summed inside each block of `block` tokens (the init argument of the same name); h0 ~ N(0, 1) [batch, heads, dim, dim]."""

import torch


def _make_inputs(batch: int, tokens: int, heads: int, dim: int, block: int, device: str = "cpu"):
    decay = -torch.rand(batch, tokens, heads, device=device) * 0.1
    cumulative = torch.cat([c.cumsum(1) for c in decay.split(block, dim=1)], dim=1)
    return {
        "keys": torch.randn(batch, tokens, heads, dim, device=device) * 0.3,
        "w": torch.randn(batch, tokens, heads, dim, device=device) * 0.3,
        "u": torch.randn(batch, tokens, heads, dim, device=device),
        "g_cumsum": cumulative,
        "h0": torch.randn(batch, heads, dim, dim, device=device),
    }
