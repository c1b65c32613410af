"""Inputs: query, key and value [tokens, heads, 40] ~ N(0, 1), and the sequences' offsets."""

import torch


def _make_inputs(lengths: list[int], heads: int, device: str = "cpu"):
    total = sum(lengths)
    query, key, value = (torch.randn(total, heads, 40, device=device) for _ in range(3))
    offsets = torch.tensor([0] + [sum(lengths[: i + 1]) for i in range(len(lengths))], dtype=torch.int32,
                           device=device)
    return {"query": query, "key": key, "value": value, "offsets": offsets}
