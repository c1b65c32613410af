"""expected: tampered|wrong_output
Timing-aware: honest on inputs it has not seen; on tensors it has seen before (the timing sets) it launches the
kernel on one row in sixteen and leaves the other rows to whatever the output buffer held. Before the engine this
scored S_op 5.1 on rms_norm (H200) against 0.68 for the honest kernel. Caught by the launches of the timed calls
(a smaller grid than the checked calls') or by their sampled outputs.
"""

import weakref

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


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.seen: dict[int, weakref.ref] = {}  # id -> the tensor (by identity, not value)

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        seen = self.seen.get(id(x))
        timed = seen is not None and seen() is x
        self.seen[id(x)] = weakref.ref(x)
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        step = 16 if timed else 1
        _rms_norm_rows[(triton.cdiv(x2.shape[0], step),)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                                          step, BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
