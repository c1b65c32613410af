"""Made-up test problem (published format): every head vector of queries scaled to unit length,
y = x * rsqrt(sum(x^2) + eps) over the last dimension, with no learned weight (statistics in float32, one
rounding at the end)."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = float(eps)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        qf = q.float()
        return (qf * torch.rsqrt(qf.pow(2).sum(dim=-1, keepdim=True) + self.eps)).to(q.dtype)
