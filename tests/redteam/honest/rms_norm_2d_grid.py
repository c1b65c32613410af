"""expected: passed
Honest Triton RMSNorm: each program normalises a [BLOCK_M, BLOCK_N] tile of BLOCK_M rows (2-D tile, fp32
accumulation, one rounding), launched on a 2-D grid whose programs are linearised into row blocks.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_rows_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    block = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    rows = block.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=1) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2 = x.reshape(-1, n_cols)
    n_rows = x2.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    block_n = triton.next_power_of_2(n_cols)
    block_m = max(1, min(4, 8192 // block_n))
    n_blocks = triton.cdiv(n_rows, block_m)
    g1 = 2 if n_blocks > 1 else 1
    grid = (triton.cdiv(n_blocks, g1), g1)  # extra programs past the last row block are masked out
    _rms_norm_rows_kernel[grid](x2, weight, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
                                BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
    return y.view(x.shape)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return launch(x, weight, self.eps)
