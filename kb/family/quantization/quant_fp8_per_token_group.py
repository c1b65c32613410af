"""Reference Triton kernel: dynamic per-token-group FP8 (e4m3fn) quantisation (1 x group_size blocks).

With x contiguous, group g of token t is the flat group index t * (H / group_size) + g, and the row-major
[T, H / group_size] scale tensor uses the same flat index, so the op is a 1-D problem over T * H / gs
groups. A program takes TILES_PER_PROGRAM tiles of [BLOCK_G, GROUP] elements (BLOCK_G groups side by
side), reduces |x| along the group axis, writes BLOCK_G fp32 scales and the quantised tile. Values are
rounded to the e4m3 grid in fp32 (nearest even, subnormals included) before the exact final cast, except on
a GPU with HW_CAST, where the conversion instruction (cvt.rn.satfinite, sm_89+) rounds to nearest even itself.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_G": 16, "TILES_PER_PROGRAM": 1, "EXACT_DIV": 0, "HW_CAST": 1, "num_warps": 4, "num_stages": 1}
SEARCH_SPACE = {
    "BLOCK_G": [1, 2, 4, 8, 16, 32],
    "TILES_PER_PROGRAM": [1, 2, 4, 8],
    "EXACT_DIV": [0, 1],
    "HW_CAST": [0, 1],
    "num_warps": [1, 2, 4, 8],
    "num_stages": [1, 2, 3, 4],
}


@triton.jit
def _e4m3_rne(v):
    """Round fp32 v (|v| <= 448) to the nearest float8_e4m3fn value (ties to even), still in fp32."""
    a = tl.abs(v)
    bits = a.to(tl.int32, bitcast=True)
    lsb = (bits >> 20) & 1  # normal range: keep 3 mantissa bits, half to even, carry into the exponent
    rn = ((bits + 0x7FFFF + lsb) & -1048576).to(tl.float32, bitcast=True)
    rs = ((a * 512.0 + 12582912.0) - 12582912.0) * 0.001953125  # subnormals: multiples of 2^-9
    r = tl.where(a >= 0.015625, rn, rs)
    sign = v.to(tl.int32, bitcast=True) ^ bits  # only the sign bit of v survives (also for -0.0)
    return (r.to(tl.int32, bitcast=True) | sign).to(tl.float32, bitcast=True)


@triton.jit
def _quant_fp8_per_token_group_kernel(x_ptr, q_ptr, s_ptr, n_groups,
                                      GROUP: tl.constexpr, BLOCK_G: tl.constexpr, TILES: tl.constexpr,
                                      EXACT_DIV: tl.constexpr, HW_CAST: tl.constexpr):
    pid = tl.program_id(0)
    g_local = tl.arange(0, BLOCK_G)
    cols = tl.arange(0, GROUP)
    for i in range(TILES):
        g = (pid * TILES + i) * BLOCK_G + g_local           # [BLOCK_G] flat group ids
        g_ok = g < n_groups
        offs = g.to(tl.int64)[:, None] * GROUP + cols[None, :]
        mask = g_ok[:, None]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-10)   # [BLOCK_G]
        scale = tl.div_rn(amax, 448.0)  # IEEE division ('/' is div.full.f32 on NVIDIA)
        if EXACT_DIV:   # IEEE division, as the reference
            v = tl.div_rn(x, scale[:, None])
        else:           # reciprocal multiply: cheaper, one fp8 ulp off on rounding midpoints (tolerated)
            v = x * tl.div_rn(1.0, scale)[:, None]
        q = tl.minimum(tl.maximum(v, -448.0), 448.0)
        if not HW_CAST:  # the GPU's cvt.rn.satfinite rounds to nearest even; the interpreter's cast may not
            q = _e4m3_rne(q)
        tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=mask)
        tl.store(s_ptr + g, scale, mask=g_ok)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def launch_quant_fp8_per_token_group(x: torch.Tensor, group_size: int, cfg: dict = TUNABLES):
    t, h = x.shape
    if h % group_size != 0:
        raise ValueError(f"hidden_size {h} is not a multiple of group_size {group_size}")
    if group_size & (group_size - 1):
        raise ValueError("group_size must be a power of two")
    xc = x.contiguous()
    q = torch.empty((t, h), dtype=torch.float8_e4m3fn, device=x.device)
    scale = torch.empty((t, h // group_size), dtype=torch.float32, device=x.device)
    n_groups = t * (h // group_size)
    per_prog = cfg["BLOCK_G"] * cfg["TILES_PER_PROGRAM"]
    grid = (max(1, _cdiv(n_groups, per_prog)),)
    _quant_fp8_per_token_group_kernel[grid](xc, q, scale, n_groups, GROUP=group_size,
                                            BLOCK_G=cfg["BLOCK_G"], TILES=cfg["TILES_PER_PROGRAM"],
                                            EXACT_DIV=bool(cfg["EXACT_DIV"]),
                                            HW_CAST=bool(cfg.get("HW_CAST", 0)) and xc.is_cuda,
                                            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return q, scale


class Model(nn.Module):
    def __init__(self, group_size: int = 128):
        super().__init__()
        self.group_size = group_size

    def forward(self, x: torch.Tensor):
        return launch_quant_fp8_per_token_group(x, self.group_size)
