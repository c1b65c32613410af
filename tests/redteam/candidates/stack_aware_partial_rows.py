"""expected: suspicious
Timing-aware by the call stack: when a function whose name mentions timing (`time_cuda`, `_time`...) is among the
callers of `forward`, it computes one row in sixteen. Against the old evaluator (separate checking and timing
paths) it passed as correct with the timed calls doing 1/16 of the work; against the engine every call comes
through the same frames, so it never finds a timed call and computes honestly, and reading frames is what the
static scan flags: `suspicious`, S = 0 until a person accepts it.
"""

import sys

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_rows(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, ROW_STEP, BLOCK: tl.constexpr):
    row = (tl.program_id(0) * ROW_STEP).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _timed(depth: int = 12) -> bool:
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        if "time" in frame.f_code.co_name:
            return True
        frame = frame.f_back
    return False


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        step = 16 if _timed() else 1
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _rms_norm_rows[(triton.cdiv(x2.shape[0], step),)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                                          step, BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
