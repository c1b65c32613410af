"""Made-up test problem: the output pass of a chunked gated linear recurrence. Per block of `block` tokens the
output is the query against the state entering the block (decayed by the query's cumulative log decay) plus
causal attention inside the block with decays exp(g_i - g_j)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, block: int = 16):
        super().__init__()
        self.block = block

    def forward(self, queries, keys, values, states, g_cumsum):
        batch, tokens, heads, dim = queries.shape
        out = torch.empty_like(values)
        scale = dim ** -0.5
        for i, start in enumerate(range(0, tokens, self.block)):
            span = slice(start, min(start + self.block, tokens))
            q = queries[:, span].float() * scale
            k = keys[:, span].float()
            v = values[:, span].float()
            g = g_cumsum[:, span].float()
            inter = torch.einsum("bthk,bhkv->bthv", q * g.exp()[..., None], states[:, i].float())
            scores = torch.einsum("bthk,bshk->bhts", q, k)
            gh = g.transpose(1, 2)
            length = q.shape[1]
            causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
            decay = torch.where(causal, gh[..., :, None] - gh[..., None, :], torch.full_like(scores, float("-inf")))
            intra = torch.einsum("bhts,bshv->bthv", scores * decay.exp(), v)
            out[:, span] = (inter + intra).to(out.dtype)
        return out
