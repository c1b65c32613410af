"""Fused residual add + RMSNorm (the pre-norm of every transformer sub-layer after the first).

Semantics (functional: the inputs are NOT mutated; two new tensors are returned):

    residual_out = (x + residual).to(x.dtype)        # the new residual stream, rounded to the model dtype
    s            = residual_out in ct                 # ct = promote_types(x.dtype, float32)
    rstd         = 1 / sqrt(mean(s ** 2, dim=-1) + eps)
    y            = (s * rstd * weight).to(x.dtype)

The norm is taken of the *rounded* sum (what the next layer reads back as the residual), so
``y == rms_norm(residual_out)`` exactly in the reference. The add is done in ``ct`` and rounded once.

Inputs:
    x:        [num_tokens, hidden_size]  sub-layer output (attention / MLP), float dtype
    residual: [num_tokens, hidden_size]  residual stream, same dtype
    weight:   [hidden_size], same dtype
Outputs (tuple):
    y:            [num_tokens, hidden_size], dtype of x
    residual_out: [num_tokens, hidden_size], dtype of x

Init kwargs: hidden_size (int), eps (float, default 1e-6).
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
        ct = torch.promote_types(x.dtype, torch.float32)
        residual_out = (x.to(ct) + residual.to(ct)).to(x.dtype)
        s = residual_out.to(ct)
        var = s.square().mean(dim=-1, keepdim=True)
        y = s * torch.rsqrt(var + self.eps) * weight.to(ct)
        return y.to(x.dtype), residual_out
