"""expected: passed
Problem silu_and_mul: two honest Triton kernels: the first writes silu(gate) in fp32 to a scratch buffer from
torch.empty, the second multiplies it by the up half and rounds once to the output dtype.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _silu_kernel(x_ptr, s_ptr, stride_x, stride_s, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    g = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(s_ptr + row * stride_s + cols, g / (1.0 + tl.exp(-g)), mask=mask)


@triton.jit
def _mul_kernel(s_ptr, x_ptr, o_ptr, stride_s, stride_x, stride_o, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    s = tl.load(s_ptr + row * stride_s + cols, mask=mask, other=0.0)
    u = tl.load(x_ptr + row * stride_x + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(o_ptr + row * stride_o + cols, (s * u).to(o_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        x2 = x.view(-1, 2 * d)
        rows = x2.shape[0]
        scratch = torch.empty((rows, d), dtype=torch.float32, device=x.device)
        out = torch.empty((rows, d), dtype=x.dtype, device=x.device)
        block = min(triton.next_power_of_2(d), 1024)
        grid = (rows, triton.cdiv(d, block))
        _silu_kernel[grid](x2, scratch, x2.stride(0), scratch.stride(0), d, BLOCK=block)
        _mul_kernel[grid](scratch, x2, out, scratch.stride(0), x2.stride(0), out.stride(0), d, BLOCK=block)
        return out.view(*x.shape[:-1], d)
