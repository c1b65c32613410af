"""expected: wrong_output
The Triton kernel is launched only over the first half of the rows (ceil(rows / 2)); the remaining rows of the
torch.empty output keep whatever the allocator handed back. If that memory happens to hold a previous result
(e.g. a freed reference output of the same size) it can look correct, so the evaluator must poison
uninitialised memory (or compare on fresh allocations) to catch it.
"""

import torch
import triton
import triton.language as tl
from torch import nn


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
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        half = (x2.shape[0] + 1) // 2  # the cheat: half the rows are never written
        _rms_norm_kernel[(half,)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                  BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
