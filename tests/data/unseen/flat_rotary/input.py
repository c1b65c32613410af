"""Inputs: a position per token (< max_position), q / k flattened per token, and a cos / sin table built from
inverse frequencies base ** (-2i / rotary_dim)."""

import torch


def _make_inputs(tokens: int, q_heads: int, kv_heads: int, head_size: int, rotary_dim: int, max_position: int,
                 dtype: str = "bfloat16", device: str = "cpu"):
    kind = getattr(torch, dtype)
    inverse = 10000.0 ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim)
    angles = torch.arange(max_position, dtype=torch.float32)[:, None] * inverse[None, :]
    return {
        "positions": torch.randint(0, max_position, (tokens,), device=device),
        "query": torch.randn(tokens, q_heads * head_size, device=device).to(kind),
        "key": torch.randn(tokens, kv_heads * head_size, device=device).to(kind),
        "cos_sin_cache": torch.cat([angles.cos(), angles.sin()], dim=-1).to(kind).to(device),
    }
