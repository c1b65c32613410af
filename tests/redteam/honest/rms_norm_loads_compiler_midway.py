"""expected: passed
Honest Triton RMSNorm whose forward, on its first call, wraps its launcher in torch.compiler.disable (to keep
it out of any graph that captures the module); that imports the compiler (dynamo) in the middle of a shape, and the
rewraps the import makes are not the candidate's tampering (the evaluator re-runs the shapes left in a worker
that loads dynamo before its integrity snapshot).
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


def _launch(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2 = x.view(-1, n_cols)
    y = torch.empty_like(x2)
    _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, eps,
                                     BLOCK=triton.next_power_of_2(n_cols))
    return y.view(x.shape)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self._launch = None

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if self._launch is None:
            self._launch = torch.compiler.disable(_launch)
        return self._launch(x, weight, self.eps)
