"""RMSNorm over the last dimension with a learned per-channel scale.

Semantics (computed in ``ct = promote_types(x.dtype, float32)``; fp32 for bf16/fp16 inputs, fp64 for fp64):

    rstd = 1 / sqrt(mean(x ** 2, dim=-1) + eps)
    y    = (x * rstd * weight).to(x.dtype)

The weight multiply happens in ``ct`` and the result is rounded to ``x.dtype`` once at the end.

Inputs:
    x:      [num_tokens, hidden_size], float (bfloat16 / float16 / float32 / float64)
    weight: [hidden_size], same dtype as x
Output:
    y:      [num_tokens, hidden_size], dtype of x

Init kwargs: hidden_size (int), eps (float, default 1e-6).
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        xf = x.to(ct)
        var = xf.square().mean(dim=-1, keepdim=True)
        y = xf * torch.rsqrt(var + self.eps) * weight.to(ct)
        return y.to(x.dtype)
