"""Triton candidate for the Atrex-layout fixture `swish_scale` (y = x * sigmoid(x) * alpha)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _swish_scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * alpha, mask=mask)


def launch_swish_scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    block = 1024
    _swish_scale_kernel[(triton.cdiv(n, block),)](x, y, n, alpha, BLOCK=block)
    return y


class Model(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return launch_swish_scale(x, self.alpha)
