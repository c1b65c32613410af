"""Depthwise causal conv1d over time followed by SiLU (Mamba / Gated DeltaNet / Qwen3-Next prefill).

Semantics
---------
Each channel ``d`` is convolved with its own ``width``-tap filter, causally (zero left padding of
``width - 1`` steps, no look-ahead), plus a per-channel bias, then SiLU::

    y[b, d, t]   = bias[d] + sum_{j=0}^{width-1} weight[d, j] * x[b, d, t - (width - 1) + j]   (x[., ., <0] = 0)
    out[b, d, t] = y * sigmoid(y)

i.e. ``silu(F.conv1d(x, weight[:, None, :], bias, padding=width-1, groups=dim)[..., :seqlen])``.
The last tap ``weight[:, width-1]`` multiplies the current step. Computed in
``torch.promote_types(x.dtype, float32)`` (taps accumulated in order j = 0..width-1) and cast back to
``x.dtype``. Every sequence starts from a zero conv state (no initial state).

Inputs
------
x       [batch, dim, seqlen]  float (bf16 / fp16 / fp32 / fp64)
weight  [dim, width]          same dtype as x
bias    [dim]                 same dtype as x

Output
------
out     [batch, dim, seqlen], dtype of x

Init kwargs: dim, width.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, width: int = 4):
        super().__init__()
        self.dim = dim
        self.width = width

    def forward(self, x, weight, bias):
        cdt = torch.promote_types(x.dtype, torch.float32)
        W = weight.shape[1]
        L = x.shape[-1]
        xp = F.pad(x.to(cdt), (W - 1, 0))
        w = weight.to(cdt)
        y = bias.to(cdt)[None, :, None].expand(x.shape[0], -1, L)
        for j in range(W):  # loop over the (4) taps, not over time
            y = y + w[None, :, j, None] * xp[..., j:j + L]
        return F.silu(y).to(x.dtype)
