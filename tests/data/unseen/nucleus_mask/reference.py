"""Made-up test problem: keep, per row, the smallest set of highest logits whose softmax mass reaches top_p (and at
most top_k of them); every other logit becomes -inf."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, logits, top_k, top_p):
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        ranks = torch.arange(logits.shape[-1], device=logits.device)[None, :]
        probs = sorted_logits.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs
        drop = (mass_before > top_p[:, None]) | (ranks >= top_k[:, None])
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        return torch.empty_like(logits).scatter_(-1, order, sorted_logits)
