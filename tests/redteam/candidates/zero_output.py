"""expected: wrong_output
Returns an all-zero tensor of the right shape and dtype, written by a Triton fill kernel of its own (so the
audit sees a real kernel and no aten compute); the all-zero check must reject it.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _zero_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(y_ptr.dtype.element_ty), mask=offs < n)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = y.numel()
        block = 4096
        _zero_kernel[(triton.cdiv(n, block),)](y, n, BLOCK=block)
        return y
