"""Triton fused residual-add + RMSNorm candidate: one program per row, BLOCK = next_power_of_2(hidden), masked.

residual_out = (x + residual) rounded to the input dtype; y = rms_norm(residual_out) * weight with fp32
accumulation (the norm reads the rounded sum, as the reference). Inputs are not mutated.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _fused_add_rms_norm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, r_out_ptr, stride_x, stride_r, stride_y, stride_ro,
                               n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    s = (x + r).to(r_out_ptr.dtype.element_ty)
    tl.store(r_out_ptr + row * stride_ro + cols, s, mask=mask)
    sf = s.to(tl.float32)
    var = tl.sum(sf * sf, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = sf * rstd * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _num_warps(block: int) -> int:
    return 4 if block <= 1024 else (8 if block <= 8192 else 16)


def launch_fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float):
    n_cols = x.shape[-1]
    x2 = x.view(-1, n_cols)
    r2 = residual.view(-1, n_cols)
    y = torch.empty_like(x2)
    r_out = torch.empty_like(x2)
    block = triton.next_power_of_2(n_cols)
    _fused_add_rms_norm_kernel[(x2.shape[0],)](
        x2, r2, weight, y, r_out, x2.stride(0), r2.stride(0), y.stride(0), r_out.stride(0), n_cols, eps,
        BLOCK=block, num_warps=_num_warps(block))
    return y.view(x.shape), r_out.view(x.shape)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
        return launch_fused_add_rms_norm(x, residual, weight, self.eps)
