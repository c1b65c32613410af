"""An RMSNorm candidate whose second launch is sized by a value its first kernel computed and the host read back
(`.item()`), as compiler seeds of references with data-dependent sizes do; the host checks the value first."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _widest_row_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n_cols, other=0.0)
    # the row width, counted from the first row's elements (a value only a run of this kernel knows)
    tl.store(out_ptr, tl.sum(tl.where(offs < n_cols, 1, 0), axis=0) + 0 * tl.sum(x.to(tl.int32), axis=0))


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps) * w
    tl.store(y_ptr + row * n_cols + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        counted = torch.empty((), dtype=torch.int32, device=x.device)
        block = triton.next_power_of_2(x2.shape[1])
        _widest_row_kernel[(1,)](x2, counted, x2.shape[1], BLOCK=block)
        width = int(counted.item())
        if width != x2.shape[1]:
            raise RuntimeError(f"counted {width} columns, not {x2.shape[1]}")
        y = torch.empty_like(x2)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight.contiguous(), y, width, self.eps, BLOCK=block)
        return y.view(x.shape)
