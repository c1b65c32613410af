"""Reference Triton kernel for linear_attn_causal_conv1d (depthwise causal conv1d + bias + SiLU).

x is [batch, dim, seqlen] with time contiguous. A program owns a [BLOCK_C channels x BLOCK_T steps] tile
and walks T_TILES consecutive time tiles (amortising the per-channel weight/bias loads). For each of the
WIDTH taps it loads the shifted window x[t - (WIDTH-1) + j] (masked for t' < 0: the zero left padding)
and accumulates in fp32, starting from the bias, taps in order j = 0..WIDTH-1 as the reference does;
then y * sigmoid(y). The shifted windows overlap, so on a GPU the WIDTH loads of a tile hit L1/L2 after
the first: HBM traffic is one read of x and one write of out.

REGISTER_SHIFT 1 forms the shifted windows from registers instead: each thread loads its aligned 16-byte chunk
of x and the chunk before it (two vector loads), and the windows are picked from those by warp shuffles. At 0,
the three shifted loads are 2 bytes out of 16-byte alignment, so sm_90 code loads them one element at a time
(2 vector and 57 scalar loads per program at the defaults; neighbouring lanes 16 bytes apart) while the data
is already on chip. Measured slower (H200, 2026-12-03, scripts/kb_configs_device.py on the four suite shapes,
median of 3 shuffled rounds): 0.68-0.88x of the direct loads at every tile, so it stays off; the scalar loads
are served from L1 and were not what bounds the kernel. What moved it was 8 warps on the 4 x 256 tile (four
elements a thread instead of eight, twice the loads in flight an SM): 117.5 vs 131.9 us at 1 x 8192 steps,
118.3 vs 131.8 at 4 x 2048, 61.6 vs 68.7 at 16 x 1024, 152.7 vs 169.9 at 8 x 2048 (1.11-1.12x; torch.compile
132.8, 134.2, 81.3, 177.0 us on the same shapes).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_C": 4, "BLOCK_T": 256, "T_TILES": 2, "REGISTER_SHIFT": 0, "num_warps": 8}
SEARCH_SPACE = {
    "BLOCK_C": [1, 2, 4, 8, 16],
    "BLOCK_T": [64, 128, 256, 512],
    "T_TILES": [1, 2, 4, 8],
    "REGISTER_SHIFT": [0, 1],
    "num_warps": [2, 4, 8],
}


@triton.jit
def _channel_block(b_ptr, dim, BLOCK_C: tl.constexpr):
    """This program's channels (int64), which exist, and their biases in fp32."""
    cs = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < dim
    cs64 = cs.to(tl.int64)
    return cs64, c_ok, tl.load(b_ptr + cs64, mask=c_ok, other=0.0).to(tl.float32)


@triton.jit
def _linear_attn_causal_conv1d_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    dim, seqlen,
    sx_b, sx_c, sx_t, sw_c, sw_j, so_b, so_c, so_t,
    WIDTH: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr, T_TILES: tl.constexpr,
):
    pid_t = tl.program_id(0)
    pid_b = tl.program_id(2).to(tl.int64)
    cs64, c_ok, bias = _channel_block(b_ptr, dim, BLOCK_C)
    x_rows = x_ptr + pid_b * sx_b + cs64[:, None] * sx_c
    o_rows = out_ptr + pid_b * so_b + cs64[:, None] * so_c
    for tt in tl.static_range(T_TILES):
        ts = (pid_t * T_TILES + tt) * BLOCK_T + tl.arange(0, BLOCK_T)
        t_ok = ts < seqlen
        acc = tl.zeros((BLOCK_C, BLOCK_T), dtype=tl.float32) + bias[:, None]
        for j in tl.static_range(WIDTH):
            w = tl.load(w_ptr + cs64 * sw_c + j * sw_j, mask=c_ok, other=0.0).to(tl.float32)
            src = ts - (WIDTH - 1) + j
            m = c_ok[:, None] & (t_ok & (src >= 0))[None, :]
            xv = tl.load(x_rows + src.to(tl.int64)[None, :] * sx_t, mask=m, other=0.0).to(tl.float32)
            acc = acc + w[:, None] * xv
        y = acc / (1.0 + tl.exp(-acc))
        tl.store(o_rows + ts.to(tl.int64)[None, :] * so_t, y.to(out_ptr.dtype.element_ty),
                 mask=c_ok[:, None] & t_ok[None, :])


@triton.jit
def _conv1d_register_shift_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    dim, seqlen,
    sx_b, sx_c, sx_t, sw_c, sw_j, so_b, so_c, so_t,
    WIDTH: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr, T_TILES: tl.constexpr, V: tl.constexpr,
):
    """The kernel above with time as [BLOCK_T // V chunks, V steps]: tap j's window (shift s = WIDTH-1-j <= V)
    is step i - s of the thread's own chunk, or of the chunk before it where i < s."""
    pid_t = tl.program_id(0)
    pid_b = tl.program_id(2).to(tl.int64)
    cs64, c_ok, bias = _channel_block(b_ptr, dim, BLOCK_C)
    x_rows = x_ptr + pid_b * sx_b + cs64[:, None, None] * sx_c
    o_rows = out_ptr + pid_b * so_b + cs64[:, None, None] * so_c
    steps = tl.zeros((BLOCK_C, BLOCK_T // V, V), dtype=tl.int32) + tl.arange(0, V)[None, None, :]
    for tt in tl.static_range(T_TILES):
        start = (pid_t * T_TILES + tt) * BLOCK_T
        ts = (start + tl.arange(0, BLOCK_T // V)[:, None] * V + tl.arange(0, V)[None, :])[None, :, :]
        ok = c_ok[:, None, None] & (ts < seqlen)
        cur = tl.load(x_rows + ts.to(tl.int64) * sx_t, mask=ok, other=0.0).to(tl.float32)
        before = ts - V
        prev = tl.load(x_rows + before.to(tl.int64) * sx_t, mask=c_ok[:, None, None] & (before >= 0)
                       & (before < seqlen), other=0.0).to(tl.float32)
        acc = tl.zeros((BLOCK_C, BLOCK_T // V, V), dtype=tl.float32) + bias[:, None, None]
        for j in tl.static_range(WIDTH):
            w = tl.load(w_ptr + cs64 * sw_c + j * sw_j, mask=c_ok, other=0.0).to(tl.float32)
            if j == WIDTH - 1:
                xv = cur
            else:
                pick = (steps - (WIDTH - 1 - j) + V) % V
                xv = tl.where(steps >= WIDTH - 1 - j, tl.gather(cur, pick, 2), tl.gather(prev, pick, 2))
            acc = acc + w[:, None, None] * xv
        y = acc / (1.0 + tl.exp(-acc))
        tl.store(o_rows + ts.to(tl.int64) * so_t, y.to(out_ptr.dtype.element_ty), mask=ok)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _chunk(x: torch.Tensor, width: int, block_t: int) -> int:
    """Steps per chunk for REGISTER_SHIFT: 16 bytes of x, at least the largest shift, at most the tile (0: the
    shifted-load kernel instead)."""
    steps = max(16 // x.element_size(), 1 << max(width - 2, 0).bit_length())
    return steps if steps <= block_t else 0


def launch_linear_attn_causal_conv1d(x, weight, bias, width):
    batch, dim, seqlen = x.shape
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    bc, bt, tt = TUNABLES["BLOCK_C"], TUNABLES["BLOCK_T"], TUNABLES["T_TILES"]
    grid = (_cdiv(seqlen, bt * tt), _cdiv(dim, bc), batch)
    args = (x, weight, bias, out, dim, seqlen, *x.stride(), *weight.stride(), *out.stride())
    chunk = _chunk(x, width, bt) if TUNABLES.get("REGISTER_SHIFT", 0) else 0
    if chunk:
        _conv1d_register_shift_kernel[grid](*args, WIDTH=width, BLOCK_C=bc, BLOCK_T=bt, T_TILES=tt, V=chunk,
                                            num_warps=TUNABLES["num_warps"])
    else:
        _linear_attn_causal_conv1d_kernel[grid](*args, WIDTH=width, BLOCK_C=bc, BLOCK_T=bt, T_TILES=tt,
                                                num_warps=TUNABLES["num_warps"])
    return out


class Model(nn.Module):
    def __init__(self, dim: int, width: int = 4):
        super().__init__()
        self.dim = dim
        self.width = width

    def forward(self, x, weight, bias):
        return launch_linear_attn_causal_conv1d(x, weight, bias, weight.shape[1])
