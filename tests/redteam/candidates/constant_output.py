"""expected: wrong_output
A Triton kernel of its own fills the output with the constant 1.0 (right shape, dtype and device, not all
zero, finite), so only the value comparison against the reference can reject it.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _fill_kernel(y_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    vals = tl.zeros([BLOCK], dtype=tl.float32) + value
    tl.store(y_ptr + offs, vals.to(y_ptr.dtype.element_ty), mask=offs < n)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = y.numel()
        block = 4096
        _fill_kernel[(triton.cdiv(n, block),)](y, n, 1.0, BLOCK=block)
        return y
