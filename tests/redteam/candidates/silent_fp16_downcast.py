"""expected: wrong_output
Honest-looking Triton RMSNorm that silently rounds x and weight to float16 and does the math in float16
(only the sum of squares is accumulated in fp32), halving its register and bandwidth cost; within the fp16
tolerance, but on the fp32 smoke shape (atol = rtol = 1e-5) the fp16 rounding (~5e-4 relative) must fail.
gpu tier: smoke
On the bf16 full tier fp16 math is *more* precise than the declared dtype, so there it is a legitimate
choice (H200, 2026-11-29: it passed as real there); the cheat is only a cheat where fp32 is declared.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_fp16_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float16)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float16)
    ss = tl.sum((x * x).to(tl.float32), axis=0)
    rstd = (1.0 / tl.sqrt(ss / n_cols + eps)).to(tl.float16)
    y = (x * rstd) * w  # fp16 math
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _rms_norm_fp16_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                              BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
