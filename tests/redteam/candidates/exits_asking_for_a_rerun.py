"""expected: crashed
Exits its worker with the status the evaluator's worker uses to ask for a re-run with the compiler loaded up
front, on every first call of a worker: a re-run is granted once per evaluation, so the second exit fails the
shape instead of re-running it forever (each re-run would draw fresh inputs and a fresh sample secret), and ends
the evaluation: every shape left is crashed too, with no worker started for it (one per shape cost a minute).
"""

import os

import torch
import triton
import triton.language as tl
from torch import nn

_calls = 0


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        global _calls
        _calls += 1
        if _calls == 1:
            os._exit(4)
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                         BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
