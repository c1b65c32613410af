"""Reference Triton kernel: MoE combine, out[t, h] = routed_scaling_factor * sum_j x[t, j, h].

Grid (cdiv(T, BLOCK_T), cdiv(H, BLOCK_H)); a program owns a [BLOCK_T, BLOCK_H] output tile, adds the
k slots in order (fixed summation order, fp32 accumulator), scales once and rounds to the output dtype
once. Pure streaming: reads T*k*H elements, writes T*H. ROW_TILES lets one program loop over several
token tiles (fewer, longer programs for small hidden sizes).

k is a compile-time constant and the slot loop is unrolled, so a program issues its k loads at once and
waits on one memory latency, not k in a row: with a runtime loop, a decode batch (64 tokens x 8 slots x
2048, 64 programs) took 11.6 us on an H200, where torch.compile's kernel took 5.3-7.5 (2026-12-03).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_T": 4, "BLOCK_H": 512, "ROW_TILES": 1, "num_warps": 4, "num_stages": 2}
SEARCH_SPACE = {
    "BLOCK_T": [1, 2, 4, 8, 16],
    "BLOCK_H": [128, 256, 512, 1024, 2048],
    "ROW_TILES": [1, 2, 4],
    "num_warps": [1, 2, 4, 8],
    "num_stages": [1, 2, 3, 4],
}


@triton.jit
def _moe_sum_reduce_kernel(x_ptr, out_ptr, n_tokens, hidden, stride_xt, stride_xk, stride_ot,
                           scaling, TOP_K: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr,
                           ROW_TILES: tl.constexpr):
    pid_t = tl.program_id(0)
    pid_h = tl.program_id(1)
    cols = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    col_ok = cols < hidden
    for i in range(ROW_TILES):
        rows = (pid_t * ROW_TILES + i) * BLOCK_T + tl.arange(0, BLOCK_T)
        rows64 = rows.to(tl.int64)
        mask = (rows < n_tokens)[:, None] & col_ok[None, :]
        base = x_ptr + rows64[:, None] * stride_xt + cols[None, :]
        acc = tl.zeros([BLOCK_T, BLOCK_H], dtype=tl.float32)
        for j in tl.static_range(TOP_K):
            acc += tl.load(base + j * stride_xk, mask=mask, other=0.0).to(tl.float32)
        acc = acc * scaling
        tl.store(out_ptr + rows64[:, None] * stride_ot + cols[None, :], acc.to(out_ptr.dtype.element_ty),
                 mask=mask)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def launch_moe_sum_reduce(x: torch.Tensor, routed_scaling_factor: float, cfg: dict = TUNABLES):
    if x.stride(-1) != 1:
        x = x.contiguous()
    t, k, h = x.shape
    out = x.new_empty((t, h))
    block_h = min(cfg["BLOCK_H"], _next_pow2(h))
    rows_per_prog = cfg["BLOCK_T"] * cfg["ROW_TILES"]
    grid = (_cdiv(t, rows_per_prog), _cdiv(h, block_h))
    _moe_sum_reduce_kernel[grid](x, out, t, h, x.stride(0), x.stride(1), out.stride(0),
                                 float(routed_scaling_factor), TOP_K=k, BLOCK_T=cfg["BLOCK_T"], BLOCK_H=block_h,
                                 ROW_TILES=cfg["ROW_TILES"], num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])
    return out


class Model(nn.Module):
    def __init__(self, routed_scaling_factor: float = 1.0):
        super().__init__()
        self.routed_scaling_factor = float(routed_scaling_factor)

    def forward(self, x: torch.Tensor):
        return launch_moe_sum_reduce(x, self.routed_scaling_factor)
