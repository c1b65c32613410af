"""expected: passed
Honest Triton RMSNorm that uses only allowed layout/allocation ops around its kernel: .contiguous() on x and
weight, .view() to 2-D and back, and an output allocated with torch.empty.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        n_cols = shape[-1]
        xc = x.contiguous().view(-1, n_cols)
        wc = weight.contiguous()
        y = torch.empty(xc.shape, dtype=x.dtype, device=x.device)
        _rms_norm_kernel[(xc.shape[0],)](xc, wc, y, n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols))
        return y.view(shape)
