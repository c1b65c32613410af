"""expected: passed
Problem fused_add_rms_norm: one honest Triton kernel per row computes residual_out = (x + residual) rounded to
the input dtype and y = rms_norm(residual_out) * weight in fp32; returns two new tensors, inputs untouched.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _add_rms_kernel(x_ptr, r_ptr, w_ptr, y_ptr, ro_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    base = row * n_cols
    a = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(r_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    s_rounded = (a + b).to(ro_ptr.dtype.element_ty)
    tl.store(ro_ptr + base + cols, s_rounded, mask=mask)
    s = s_rounded.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(s * s, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + cols, (s * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
        n_cols = x.shape[-1]
        xc = x.contiguous().view(-1, n_cols)
        rc = residual.contiguous().view(-1, n_cols)
        y = torch.empty_like(xc)
        residual_out = torch.empty_like(xc)
        _add_rms_kernel[(xc.shape[0],)](xc, rc, weight, y, residual_out, n_cols, self.eps,
                                        BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape), residual_out.view(x.shape)
