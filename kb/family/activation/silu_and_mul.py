"""Reference Triton kernel: SiLU-and-mul (SwiGLU) of a fused gate_up projection.

out[t, j] = silu(x[t, j]) * x[t, I + j], silu(g) = g / (1 + exp(-g)), fp32 math, one rounding.

Tiling: a [ROWS_PER_PROGRAM, BLOCK_N] tile of the output per program; it reads the matching gate tile
(columns j) and up tile (columns I + j) of the same rows, so every load and store is a contiguous,
vectorisable run of BLOCK_N elements.
  * COL_LOOP = False: one program per tile on a 1-D grid, column blocks of a row block consecutive, so
    programs that run together stream neighbouring bytes. (Row blocks on grid axis 0 and column blocks on axis
    1 put consecutive programs a row apart: 175 us against torch.compile's 166 at 8192 x 14336 on an H200.)
  * COL_LOOP = True: 1-D grid over row blocks; each program walks its rows' columns in BLOCK_N steps
    (fewer, longer-lived programs: less scheduling overhead for narrow I, less parallelism for few rows).
Row offsets are int64 (T * 2I exceeds 2^31 at 65536 tokens x 28672). The width I is a compile-time constant
(one compile per width): the output's row stride and the column-block count follow from it, four runtime
arguments remain.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_N": 1024, "ROWS_PER_PROGRAM": 1, "COL_LOOP": False, "num_warps": 4}
SEARCH_SPACE = {
    "BLOCK_N": [64, 128, 256, 512, 1024, 2048, 4096],
    "ROWS_PER_PROGRAM": [1, 2, 4, 8],
    "COL_LOOP": [False, True],
    "num_warps": [1, 2, 4, 8, 16],
}


@triton.jit
def _silu_mul_tile(x_rows, o_rows, row_mask, cols, N_COLS: tl.constexpr, OUT_DTYPE: tl.constexpr):
    mask = row_mask[:, None] & (cols < N_COLS)[None, :]
    gate = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_rows + N_COLS + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(o_rows + cols[None, :], out.to(OUT_DTYPE), mask=mask)


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, n_rows, stride_x, N_COLS: tl.constexpr,
                         ROWS: tl.constexpr, BLOCK_N: tl.constexpr, COL_LOOP: tl.constexpr):
    pid = tl.program_id(0)
    n_col_blocks: tl.constexpr = (N_COLS + BLOCK_N - 1) // BLOCK_N
    if COL_LOOP:
        row_block = pid
    else:
        row_block = pid // n_col_blocks
    rows = row_block.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    x_rows = x_ptr + rows[:, None] * stride_x
    o_rows = out_ptr + rows[:, None] * N_COLS  # the output is contiguous
    offs = tl.arange(0, BLOCK_N)
    if COL_LOOP:
        for start in range(0, N_COLS, BLOCK_N):
            _silu_mul_tile(x_rows, o_rows, row_mask, start + offs, N_COLS, out_ptr.dtype.element_ty)
    else:
        _silu_mul_tile(x_rows, o_rows, row_mask, (pid % n_col_blocks) * BLOCK_N + offs, N_COLS,
                       out_ptr.dtype.element_ty)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _rows(t: torch.Tensor, n_cols: int) -> tuple[torch.Tensor, int]:
    """t as rows of n_cols with unit column stride, and its row stride; a contiguous t as it is (a reshape
    costs microseconds of host time per call, which small shapes pay in full)."""
    if t.is_contiguous():
        return t, n_cols
    t2 = t.reshape(-1, n_cols)
    if t2.stride(-1) != 1:
        t2 = t2.contiguous()
    return t2, t2.stride(0)


def launch_silu_and_mul(x: torch.Tensor, cfg: dict | None = None) -> torch.Tensor:
    cfg = TUNABLES if cfg is None else cfg
    d = x.shape[-1] // 2
    x2, stride_x = _rows(x, 2 * d)
    n_rows = x.numel() // (2 * d) if d else 0
    out = x.new_empty((*x.shape[:-1], d))
    if n_rows > 0 and d > 0:
        rows = cfg["ROWS_PER_PROGRAM"]
        block = min(cfg["BLOCK_N"], _next_pow2(d))
        col_loop = cfg["COL_LOOP"]
        col_blocks = 1 if col_loop else _cdiv(d, block)
        grid = (_cdiv(n_rows, rows) * col_blocks,)
        _silu_and_mul_kernel[grid](x2, out, n_rows, stride_x, N_COLS=d, ROWS=rows, BLOCK_N=block,
                                   COL_LOOP=col_loop, num_warps=cfg["num_warps"])
    return out


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return launch_silu_and_mul(x)
