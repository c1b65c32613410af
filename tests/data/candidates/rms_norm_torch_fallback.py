"""Correct, but computes with PyTorch ops instead of a kernel of its own: a fallback."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6, **kwargs):
        super().__init__()
        self.eps = eps

    def forward(self, x, weight):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * weight.float()).to(x.dtype)
