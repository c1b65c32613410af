"""expected: fallback
Numerically correct RMSNorm computed entirely with PyTorch ops (pow, mean, rsqrt, mul): no Triton kernel runs,
so it must pass correctness but be marked not-real (S=0).
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
        rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * rstd * weight.to(ct)).to(x.dtype)
