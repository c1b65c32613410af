"""expected: wrong_output
Computes the correct RMSNorm with an own Triton kernel but stores it in place into x and returns x (no output
allocation, half the memory traffic); the values are right, but an input the reference treats as read-only
was modified.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_inplace_kernel(x_ptr, w_ptr, stride_x, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptr + row * stride_x + cols, (x * rstd * w).to(x_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        _rms_norm_inplace_kernel[(x2.shape[0],)](x2, weight, x2.stride(0), n_cols, self.eps,
                                                 BLOCK=triton.next_power_of_2(n_cols))
        return x
