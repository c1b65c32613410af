"""An RMSNorm candidate that the CPU interpreter runs correctly and Triton's compiler rejects: `_row` returns
a float32 tile from one constexpr branch and the input's dtype from the other, and a compiled function's returns
must share one type."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _row(ptrs, mask, UPCAST: tl.constexpr):
    if UPCAST:
        return tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    return tl.load(ptrs, mask=mask, other=0.0)


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = _row(x_ptr + row * n_cols + offs, mask, True)
    w = _row(w_ptr + offs, mask, True)
    y = x / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps) * w
    tl.store(y_ptr + row * n_cols + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight.contiguous(), y, x2.shape[1], self.eps,
                                         BLOCK=triton.next_power_of_2(x2.shape[1]))
        return y.view(x.shape)
