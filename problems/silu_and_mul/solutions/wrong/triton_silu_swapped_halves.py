"""WRONG Triton SiLU-and-mul candidate (must fail the evaluator): applies silu to the second (up) half
and multiplies by the first (gate) half, i.e. out = x[:, :I] * silu(x[:, I:]) -- the swapped-halves bug.

Grid (rows, cdiv(I, BLOCK)) with BLOCK = min(next_power_of_2(I), 4096): one program per row whenever
I <= 4096 (all smoke shapes), a few column blocks per row for large intermediate sizes. Masked tails.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, stride_x, stride_o, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    gate = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * stride_x + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    out = up / (1.0 + tl.exp(-up)) * gate  # BUG: silu on the wrong half
    tl.store(out_ptr + row * stride_o + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def launch_silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    x2 = x.view(-1, 2 * d)
    out = torch.empty((x2.shape[0], d), dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(d), 4096)
    grid = (x2.shape[0], triton.cdiv(d, block))
    _silu_and_mul_kernel[grid](x2, out, x2.stride(0), out.stride(0), d, BLOCK=block,
                               num_warps=4 if block <= 1024 else 8)
    return out.view(*x.shape[:-1], d)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return launch_silu_and_mul(x)
