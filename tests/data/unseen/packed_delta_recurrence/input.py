"""Inputs: packed query/key [1, tokens, key_heads, dim] and value [1, tokens, heads, dim] ~ N(0, 1); gate
inputs a, b [1, tokens, heads] and per-head A_log, dt_bias; a cache of `slots` states, each sequence's slot
chosen at random (distinct)."""

import torch


def _make_inputs(lengths: list[int], key_heads: int, heads: int, dim: int, slots: int, device: str = "cpu"):
    total = sum(lengths)
    offsets = torch.tensor([0] + [sum(lengths[: i + 1]) for i in range(len(lengths))], dtype=torch.int32,
                           device=device)
    return {
        "q": torch.randn(1, total, key_heads, dim, device=device),
        "k": torch.randn(1, total, key_heads, dim, device=device),
        "v": torch.randn(1, total, heads, dim, device=device),
        "a": torch.randn(1, total, heads, device=device),
        "b": torch.randn(1, total, heads, device=device),
        "A_log": torch.rand(heads, device=device).log(),
        "dt_bias": torch.randn(heads, device=device) * 0.5,
        "ssm_state": torch.randn(slots, heads, dim, dim, device=device) * 0.1,
        "ssm_state_indices": torch.randperm(slots, device=device)[: len(lengths)].to(torch.int32),
        "cu_seqlens": offsets,
    }
