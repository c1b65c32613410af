"""expected: wrong_output|tampered
Timing-aware: computes honestly on inputs it has not seen (the evaluator's checks used fresh copies) and, on
tensors it has seen before (the rotating timing sets), returns the previous call's output without launching
anything. Before the engine this scored S_op 38 on rms_norm (H200). Caught by the timed calls' sampled outputs
(the previous output belongs to another input set) or, with one input set, by their launches differing from the
checked calls'.
"""

import weakref

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
        self.seen: dict[int, weakref.ref] = {}  # id -> the tensor (by identity, not value)
        self.previous: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        seen = self.seen.get(id(x))
        if seen is not None and seen() is x and self.previous is not None and self.previous.shape == x.shape:
            return self.previous  # "timed": no work at all
        self.seen[id(x)] = weakref.ref(x)
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                         BLOCK=triton.next_power_of_2(n_cols))
        self.previous = y.view(x.shape)
        return self.previous
