"""Triton LayerNorm candidate: one program per row, BLOCK = next_power_of_2(hidden), masked, fp32 statistics.

y = (x - mean) * rsqrt(var + eps) * weight + bias (biased variance), rounded to x.dtype once.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _num_warps(block: int) -> int:
    return 4 if block <= 1024 else (8 if block <= 8192 else 16)


def launch_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2 = x.view(-1, n_cols)
    y = torch.empty_like(x2)
    block = triton.next_power_of_2(n_cols)
    _layer_norm_kernel[(x2.shape[0],)](x2, weight, bias, y, x2.stride(0), y.stride(0), n_cols, eps,
                                       BLOCK=block, num_warps=_num_warps(block))
    return y.view(x.shape)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return launch_layer_norm(x, weight, bias, self.eps)
