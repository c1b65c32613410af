"""expected: fallback
Problem gemm_bf16_linear_epilogue: the GEMM itself (the >99% of the work) is done by torch.matmul, and only the
cheap epilogue (bias, activation, residual) runs in a Triton kernel of the candidate's own; an own kernel ran,
but aten computed the matmul, so it must be marked not-real.
"""

import torch
import triton
import triton.language as tl
from torch import nn

_ACT = {"none": 0, "gelu_tanh": 1, "silu": 2, "sigmoid": 3}


@triton.jit
def _epilogue_kernel(z_ptr, b_ptr, r_ptr, g_ptr, y_ptr, M, N, stride_z, stride_r, stride_g, stride_y,
                     HAS_BIAS: tl.constexpr, ACT: tl.constexpr, HAS_RES: tl.constexpr, HAS_GATE: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    z = tl.load(z_ptr + rows[:, None] * stride_z + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if HAS_BIAS:
        z = z + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    if ACT == 1:
        u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
        t = 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)  # tanh(u)
        z = 0.5 * z * (1.0 + t)
    elif ACT == 2:
        z = z / (1.0 + tl.exp(-z))
    elif ACT == 3:
        z = 1.0 / (1.0 + tl.exp(-z))
    if HAS_GATE:
        z = z * tl.load(g_ptr + rows[:, None] * stride_g + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if HAS_RES:
        z = z + tl.load(r_ptr + rows[:, None] * stride_r + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], z.to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, activation: str = "none", has_bias: bool = False, has_residual: bool = False,
                 has_gate: bool = False):
        super().__init__()
        self.act = _ACT[activation]
        self.has_bias = bool(has_bias)
        self.has_residual = bool(has_residual)
        self.has_gate = bool(has_gate)

    def forward(self, x, w, bias=None, residual=None, gate=None):
        z = torch.matmul(x, w.t())  # the cheat: the GEMM is PyTorch's
        m, n = z.shape
        y = torch.empty_like(z)
        bm, bn = 32, 128
        grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
        _epilogue_kernel[grid](z, bias if self.has_bias else z, residual if self.has_residual else z,
                               gate if self.has_gate else z, y, m, n, z.stride(0),
                               residual.stride(0) if self.has_residual else 0,
                               gate.stride(0) if self.has_gate else 0, y.stride(0),
                               HAS_BIAS=self.has_bias, ACT=self.act, HAS_RES=self.has_residual,
                               HAS_GATE=self.has_gate,
                               BLOCK_M=bm, BLOCK_N=bn)
        return y
