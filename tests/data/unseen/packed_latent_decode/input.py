"""Inputs: query [batch, heads, rank + rope] ~ N(0, 0.25), the packed latent cache [tokens, 1, rank + rope]
~ N(0, 1) and the context lengths (int32)."""

import torch


def _make_inputs(lengths: list[int], heads: int, rank: int, rope: int, device: str = "cpu"):
    width = rank + rope
    query = torch.randn(len(lengths), heads, width, device=device) * 0.5
    latent_cache = torch.randn(sum(lengths), 1, width, device=device)
    context_lens = torch.tensor(lengths, dtype=torch.int32, device=device)
    return {"query": query, "latent_cache": latent_cache, "context_lens": context_lens}
