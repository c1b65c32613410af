"""Inputs: queries ~ N(0, 1), keys ~ N(0, 0.3^2), values ~ N(0, 1) [batch, tokens, heads, dim]; states, the
state entering each block of `block` tokens, ~ N(0, 0.1^2) [batch, blocks, heads, dim, dim]; g_cumsum, per-token
log decays in (-0.1, 0) summed inside each block."""

import torch


def _make_inputs(batch: int, tokens: int, heads: int, dim: int, block: int, device: str = "cpu"):
    decay = -torch.rand(batch, tokens, heads, device=device) * 0.1
    cumulative = torch.cat([c.cumsum(1) for c in decay.split(block, dim=1)], dim=1)
    blocks = -(-tokens // block)
    return {
        "queries": torch.randn(batch, tokens, heads, dim, device=device),
        "keys": torch.randn(batch, tokens, heads, dim, device=device) * 0.3,
        "values": torch.randn(batch, tokens, heads, dim, device=device),
        "states": torch.randn(batch, blocks, heads, dim, dim, device=device) * 0.1,
        "g_cumsum": cumulative,
    }
