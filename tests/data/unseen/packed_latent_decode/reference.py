"""Decode attention over a shared latent: sequence b's latents are the context_lens[b] rows of latent_cache
after those of the sequences before it; every head scores the whole latent row (scale 1/sqrt(width)) and
returns the softmax-weighted sum of its first latent_rank channels."""

import math

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, n_heads: int, latent_rank: int, rope_width: int):
        super().__init__()
        self.n_heads, self.latent_rank, self.rope_width = n_heads, latent_rank, rope_width

    def forward(self, query: torch.Tensor, latent_cache: torch.Tensor, context_lens: torch.Tensor) -> torch.Tensor:
        lens = context_lens.long()
        first = torch.cumsum(lens, 0) - lens
        steps = torch.arange(int(lens.max()), device=query.device)
        rows = (first[:, None] + steps[None, :]).clamp(max=latent_cache.shape[0] - 1)
        latents = latent_cache[rows, 0].float()                                   # [batch, longest, width]
        scores = torch.einsum("bhw,btw->bht", query.float(), latents) / math.sqrt(query.shape[-1])
        scores = scores.masked_fill(steps[None, None, :] >= lens[:, None, None], float("-inf"))
        out = torch.einsum("bht,btr->bhr", scores.softmax(-1), latents[..., : self.latent_rank])
        return out.to(query.dtype)
