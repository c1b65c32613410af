"""A Triton RMSNorm that writes far out of bounds (CUDA illegal memory access) when there are > 1000 rows."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, poison_offset, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + poison_offset + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6, **kwargs):
        super().__init__()
        self.eps = eps

    def forward(self, x, weight):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        poison = (1 << 40) if x2.shape[0] > 1000 else 0
        _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.shape[1], self.eps, poison,
                                         BLOCK=triton.next_power_of_2(x2.shape[1]))
        return y.view_as(x)
