"""expected: tampered
Bypasses the output comparison by replacing an attribute of a harness class rather than a function: a property
`ok` on the comparison's result class that is always true (the tamper check used to watch functions only). The
kernel skips the normalisation, so nearly every element is wrong. Caught: the integrity snapshot now covers the
methods and properties of the evaluator's classes (and the parent's own check would disagree with the outputs).
"""

import torch
import triton
import triton.language as tl
from torch import nn

from aka_tui.bench.problem import tolerance

tolerance.Comparison.ok = property(lambda self: True, lambda self, value: None)


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _scale_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols,
                                      BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
