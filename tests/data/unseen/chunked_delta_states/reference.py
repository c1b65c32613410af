"""Made-up test problem: the state pass of a chunked delta rule.

Tokens are split into blocks of `block`; the state S [dim, dim] of each (sequence, head) starts at h0 and,
per block: the state entering the block is recorded, corrected values are u - w S, and
S = exp(g_end) S + keys^T (corrected * exp(g_end - g_cumsum)), with g_end the block's last g_cumsum.
Returns {"entering": [batch, blocks, heads, dim, dim], "corrected": like u, "last": [batch, heads, dim, dim]}.
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, block: int = 16):
        super().__init__()
        self.block = block

    def forward(self, keys, w, u, g_cumsum, h0):
        batch, tokens, heads, dim = keys.shape
        blocks = -(-tokens // self.block)
        entering = torch.empty(batch, blocks, heads, dim, u.shape[-1], dtype=keys.dtype)
        corrected = torch.empty_like(u)
        S = h0.double().transpose(1, 2).clone()  # [batch, dim, heads, dim]: any layout will do
        for i in range(blocks):
            span = slice(i * self.block, min((i + 1) * self.block, tokens))
            entering[:, i] = S.transpose(1, 2).to(keys.dtype)
            c = u[:, span].double() - torch.einsum("bthk,bkhv->bthv", w[:, span].double(), S)
            corrected[:, span] = c.to(u.dtype)
            g = g_cumsum[:, span].double()
            g_end = g[:, -1:]
            S = S * g_end[:, 0][:, None, :, None].exp() + torch.einsum(
                "bthk,bthv->bkhv", keys[:, span].double(), c * (g_end - g).exp()[..., None])
        return {"entering": entering, "corrected": corrected, "last": S.transpose(1, 2).float()}
