"""Reference Triton kernel: DeepSeek-V3-style block-scaled fp8 GEMM, out = (a * a_scale) @ (b * b_scale)^T.

a [M, K] e4m3 with one fp32 scale per row and 128-wide K group; b [N, K] e4m3 with one fp32 scale per
128 x 128 block. One program per [BLOCK_M, BLOCK_N] output tile (x K split when SPLIT_K > 1), GROUP_M
L2 swizzle. BLOCK_K divides the scale group, so every K step lies inside one group: the step's fp8 x fp8
tl.dot starts from zero (fp32 result) and is added to the fp32 accumulator times a_scale[m, g] (a
[BLOCK_M] vector) and b_scale[n // 128, g] (a [BLOCK_N] vector; constant when BLOCK_N <= 128 divides
128). Promoting every K step also bounds the error of the tensor cores' limited-precision fp8
accumulation. PREFETCH_SCALES loads the next K step's scales before the current step's dot (module code
comment: on the H200 the scale loads otherwise stall every step). SCALE_T first copies a_scale [M, K/128]
to a [K/128, M] buffer (a small kernel), so that a K step's BLOCK_M a scales are one contiguous vector
instead of BLOCK_M loads K/128 * 4 bytes apart (H200, 2026-11-30: 1.13x at K 16384, 1.06x at K 1536; a
knock-out probe had shown the per-row scales costing 13% at K 16384 while promoting every step costs
nothing measurable: scripts/bound_probes.py). UPCAST converts the fp8 tiles to fp16 (exact) before the dot,
for GPUs without fp8 MMA and for outputs held to a tolerance the fp8 MMA's accumulator misses; with UPCAST_PASS (and TMA) a first small kernel writes fp16 copies
of both operands and the TMA kernel runs on them, so the MMA reads its operands straight from shared memory
(converting tiles in the loop sends them through registers and back every K step).
SPLIT_K > 1 writes fp32 partials to a workspace that a second kernel sums in split order.
TMA loads the fp8 tiles through tensor descriptors (a second kernel, used when there is no split-K or
upcast and the operands are 16-byte aligned): 154 registers instead of 201 in the sm_90 code, so 3 stages
leave room for 3 programs per SM. H200 grid sweeps (2026-11-30): TMA with GROUP_M 16 and 3 stages ran
1.31x faster than the pointer kernel (4 stages, GROUP_M 8) at K 1536 and 0.99x at K 16384.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 16, "SPLIT_K": 1, "UPCAST": 0,
            "UPCAST_PASS": 1, "PREFETCH_SCALES": 1, "SCALE_T": 1, "TMA": 1, "RESCALE": 0, "num_warps": 4,
            "num_stages": 3}
SEARCH_SPACE = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [32, 64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "SPLIT_K": [1, 2, 4, 8],
    "UPCAST": [0, 1],
    "UPCAST_PASS": [0, 1],
    "PREFETCH_SCALES": [0, 1],
    "SCALE_T": [0, 1],
    "TMA": [0, 1],
    "RESCALE": [0, 1],
    "num_warps": [2, 4, 8],
    "num_stages": [2, 3, 4, 5],
}
INERT = {"RESCALE": {"UPCAST": [0]}}  # the rescaled accumulator needs the fp16 copies (their zeroed groups)
# Hopper's fp8 MMA sums a step's products in an accumulator narrower than fp32, so an fp32 output held to a
# float16 tolerance can miss it (H200, 2026-12-02: 0.35-0.58% of elements beyond 5e-3, largest error 0.04-0.06
# on outputs of mean magnitude 36-51, 128-wide K groups; 64- and 32-wide steps still 0.05-0.13% and
# 0.0004-0.006%). fp16 operands give exact products summed in fp32, at half the MMA rate: as a separate pass
# into 128 x 128 tiles with 8 warps, 450-509 TFLOP/s at M >= 4096 against 303-325 for the conversion inside
# the loop (scripts/fp8_gemm_probe_device.py).
ACCURACY_STEPS = [{"UPCAST": 1, "UPCAST_PASS": 1, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8}]
# That narrower accumulator exists only on the GPU: the CPU interpreter sums fp8 products exactly, so a session
# there starts from the accuracy step (a transfer to a published float32-output problem held to 5e-3 passed
# every CPU check at the defaults and failed 0.35% of elements on an H100, 2026-12-06).
ACCURACY_NEEDS_GPU = True

REDUCE_BLOCK = 1024
SMEM_BUDGET = 200 * 1024  # bytes of operand buffers per program (H100/H200 allow 227 KiB per block)


def _fit_smem(stages: int, block_k: int, bytes_per_k: int):
    """Shrink (num_stages, BLOCK_K) until stages * BLOCK_K * bytes_per_k fits SMEM_BUDGET, so that every
    point of SEARCH_SPACE launches; bytes_per_k = operand bytes per unit of K (A rows + B columns)."""
    while stages * block_k * bytes_per_k > SMEM_BUDGET:
        if stages > 2:
            stages -= 1
        elif block_k > 32:
            block_k //= 2
        else:
            return 1, block_k
    return stages, block_k


@triton.jit
def _tile_of(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of program pid: GROUP_M-row bands of tiles, column-major inside a band (L2 reuse)."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    band = GROUP_M * num_pid_n
    first_m = (pid // band) * GROUP_M
    band_m = tl.minimum(tl.cdiv(M, BLOCK_M) - first_m, GROUP_M)
    return first_m + (pid % band) % band_m, (pid % band) // band_m


@triton.jit
def _promote(partial, sa, sb, SB_SCALAR: tl.constexpr):
    """One K step's fp32 dot times its scales: sa [BLOCK_M], sb a scalar or [BLOCK_N]."""
    if SB_SCALAR:
        return partial * (sa * sb)[:, None]
    return partial * sa[:, None] * sb[None, :]


@triton.jit
def _gemm_fp8_blockscale_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, out_ptr, ws_ptr, M, N, K, k_per_split,
                                stride_am, stride_asm, stride_asg, stride_bn, stride_bsn, stride_om,
                                GROUP: tl.constexpr, SPLIT_K: tl.constexpr, UPCAST: tl.constexpr,
                                PREFETCH_SCALES: tl.constexpr, SB_SCALAR: tl.constexpr,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    pid_k = tl.program_id(1)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = (offs_m % M).to(tl.int64)          # wrapped: no M/N masks on the loads
    cols = (offs_n % N).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    k_lo = pid_k * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + (k_lo + offs_k)[None, :]
    b_ptrs = b_ptr + cols[None, :] * stride_bn + (k_lo + offs_k)[:, None]
    sa_ptrs = as_ptr + rows * stride_asm
    if SB_SCALAR:
        # BLOCK_N divides the 128-wide scale block, so the tile has one b scale per K step: a scalar load.
        # A [BLOCK_N] vector would be loaded in a blocked layout and converted to the MMA layout through
        # shared memory, with a barrier, every K step (seen in the compiled code for sm_90).
        sb_ptrs = bs_ptr + ((pid_n * BLOCK_N) // GROUP).to(tl.int64) * stride_bsn
    else:
        sb_ptrs = bs_ptr + (cols // GROUP) * stride_bsn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    last_g = (K - 1) // GROUP
    sa = tl.load(sa_ptrs + (k_lo // GROUP) * stride_asg)
    sb = tl.load(sb_ptrs + k_lo // GROUP)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k_ok = (k0 + offs_k) < k_hi
        a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        if UPCAST:
            a = a.to(tl.float16)
            b = b.to(tl.float16)
        if PREFETCH_SCALES:
            # The next step's scales are loaded before this step's dot: their global-load latency overlaps
            # the MMA instead of stalling between the dot and the promotion (the pipeliner leaves them alone).
            g_next = tl.minimum((k0 + BLOCK_K) // GROUP, last_g)
            sa_next = tl.load(sa_ptrs + g_next * stride_asg)
            sb_next = tl.load(sb_ptrs + g_next)
            acc += _promote(tl.dot(a, b), sa, sb, SB_SCALAR)
            sa = sa_next
            sb = sb_next
        else:
            g = k0 // GROUP
            acc += _promote(tl.dot(a, b), tl.load(sa_ptrs + g * stride_asg), tl.load(sb_ptrs + g), SB_SCALAR)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    if SPLIT_K == 1:
        tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :],
                 acc.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ws_ptr + (pid_k * M + offs_m.to(tl.int64))[:, None] * N + offs_n[None, :], acc, mask=mask)


@triton.jit
def _gemm_fp8_blockscale_tma_kernel(a_desc, as_ptr, b_desc, bs_ptr, out_ptr, M, N, K,
                                    stride_asm, stride_asg, stride_bsn, stride_om,
                                    GROUP: tl.constexpr, SB_SCALAR: tl.constexpr, RESCALE: tl.constexpr,
                                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                    GROUP_M: tl.constexpr):
    """The main kernel's loop (prefetched scales, one program per tile, no split) with the fp8 tiles loaded
    by the tensor memory accelerator: one descriptor load per tile instead of per-thread addresses, and the
    edges zero-filled by the hardware (no masks).

    RESCALE keeps one accumulator in units of the current group's scales: at each step it is multiplied by
    (previous scales / this step's) and the dot accumulates into it, and the last scales multiply it at the end,
    so the MMA never needs a second [BLOCK_M, BLOCK_N] register tile for the step's own product (the room a
    128 x 256 tile needs). A zero scale keeps the previous unit; its operand rows were zeroed by the pass."""
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    sa_ptrs = as_ptr + (offs_m % M).to(tl.int64) * stride_asm
    if SB_SCALAR:
        sb_ptrs = bs_ptr + ((pid_n * BLOCK_N) // GROUP).to(tl.int64) * stride_bsn
    else:
        sb_ptrs = bs_ptr + ((offs_n % N) // GROUP).to(tl.int64) * stride_bsn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    last_g = (K - 1) // GROUP
    sa = tl.load(sa_ptrs)
    sb = tl.load(sb_ptrs)
    unit_a = tl.where(sa == 0, 1.0, sa)
    unit_b = tl.where(sb == 0, 1.0, sb)
    for k0 in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k0])
        b = b_desc.load([pid_n * BLOCK_N, k0])
        g_next = tl.minimum((k0 + BLOCK_K) // GROUP, last_g)
        sa_next = tl.load(sa_ptrs + g_next * stride_asg)
        sb_next = tl.load(sb_ptrs + g_next)
        if RESCALE:
            step_a = tl.where(sa == 0, unit_a, sa)
            step_b = tl.where(sb == 0, unit_b, sb)
            acc = tl.dot(a, b.T, _promote(acc, unit_a / step_a, unit_b / step_b, SB_SCALAR))
            unit_a = step_a
            unit_b = step_b
        else:
            acc += _promote(tl.dot(a, b.T), sa, sb, SB_SCALAR)
        sa = sa_next
        sb = sb_next
    if RESCALE:
        acc = _promote(acc, unit_a, unit_b, SB_SCALAR)
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=mask)


@triton.jit
def _upcast_kernel(src_ptr, dst_ptr, scale_ptr, K, stride_src, stride_scale, ROWS_PER_SCALE: tl.constexpr,
                   GROUP: tl.constexpr, ZERO_DEAD: tl.constexpr, BLOCK: tl.constexpr):
    """dst[r, :] = fp16(src[r, :]) for one row per program axis 0 (fp8 e4m3/e5m2 values are exact in fp16);
    ZERO_DEAD writes zeros where the row's K group has a zero scale (scale[r // ROWS_PER_SCALE, k // GROUP]),
    so a group that the reference multiplies by zero adds nothing to an accumulator kept in other units."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < K
    x = tl.load(src_ptr + row * stride_src + offs, mask=mask).to(tl.float16)
    if ZERO_DEAD:
        scale = tl.load(scale_ptr + (row // ROWS_PER_SCALE) * stride_scale + offs // GROUP, mask=mask, other=1.0)
        x = tl.where(scale == 0, 0.0, x)
    tl.store(dst_ptr + row * K + offs, x, mask=mask)


def _upcast(x: torch.Tensor, scale: torch.Tensor | None = None, rows_per_scale: int = 1,
            group: int = 128) -> torch.Tensor:
    """An fp16 copy of x [rows, K]; with `scale` [rows / rows_per_scale, K / group], groups of zero scale zeroed."""
    rows, k = x.shape
    out = torch.empty((rows, k), dtype=torch.float16, device=x.device)
    block = min(2048, _next_pow2(k))
    _upcast_kernel[(rows, _cdiv(k, block))](x, out, x if scale is None else scale, k, x.stride(0),
                                            0 if scale is None else scale.stride(0), ROWS_PER_SCALE=rows_per_scale,
                                            GROUP=group, ZERO_DEAD=scale is not None, BLOCK=block, num_warps=4)
    return out


@triton.jit
def _scales_transposed_kernel(src_ptr, dst_ptr, M, G, stride_sm, BLOCK_M: tl.constexpr, BLOCK_G: tl.constexpr):
    """dst[g, m] = src[m, g] for the [M, G] a scales."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_g = tl.program_id(1) * BLOCK_G + tl.arange(0, BLOCK_G)
    mask = (offs_m < M)[:, None] & (offs_g < G)[None, :]
    x = tl.load(src_ptr + offs_m.to(tl.int64)[:, None] * stride_sm + offs_g[None, :], mask=mask)
    tl.store(dst_ptr + offs_g.to(tl.int64)[None, :] * M + offs_m[:, None], x, mask=mask)


@triton.jit
def _gemm_fp8_splitk_reduce_kernel(ws_ptr, out_ptr, M, N, stride_om, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs_n < N
    z = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(SPLIT_K):                 # fixed order: deterministic
        z += tl.load(ws_ptr + (s * M + row) * N + offs_n, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_om + offs_n, z.to(out_ptr.dtype.element_ty), mask=mask)


def _tma_ok(a: torch.Tensor, b: torch.Tensor, split: int, cfg: dict) -> bool:
    """TMA descriptors need 16-byte aligned bases and row strides; the TMA kernel has no split-K, and it takes
    upcast operands only as the fp16 copies UPCAST_PASS writes (contiguous rows of K halves)."""
    if split != 1:
        return False
    if cfg["UPCAST"]:
        return bool(cfg.get("UPCAST_PASS", 0)) and a.shape[1] % 8 == 0
    return (a.stride(0) % 16 == 0 and b.stride(0) % 16 == 0
            and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def launch_gemm_fp8_blockscale(a, a_scale, b, b_scale, out_dtype: torch.dtype, group_size: int = 128,
                               cfg: dict = TUNABLES):
    if a.stride(-1) != 1:
        a = a.contiguous()
    if b.stride(-1) != 1:
        b = b.contiguous()
    if a_scale.stride(-1) != 1:
        a_scale = a_scale.contiguous()
    if b_scale.stride(-1) != 1:
        b_scale = b_scale.contiguous()
    M, K = a.shape
    N = b.shape[0]
    out = torch.empty((M, N), dtype=out_dtype, device=a.device)
    if M == 0 or N == 0:
        return out
    bm, bn, split = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["SPLIT_K"]
    elem = 2 if cfg["UPCAST"] else 1
    stages, bk = _fit_smem(cfg["num_stages"], min(cfg["BLOCK_K"], group_size), (bm + bn) * elem)
    if group_size % bk != 0:
        raise ValueError(f"BLOCK_K {bk} must divide the scale group {group_size}")
    k_per_split = _cdiv(_cdiv(K, bk), split) * bk
    ws = torch.empty((split, M, N), dtype=torch.float32, device=a.device) if split > 1 else out
    grid = (_cdiv(M, bm) * _cdiv(N, bn), split)
    stride_asm, stride_asg = a_scale.stride(0), 1
    groups = a_scale.shape[1]
    row_scales = a_scale
    if cfg.get("SCALE_T", 0) and groups > 1:
        scales_t = torch.empty((groups, M), dtype=a_scale.dtype, device=a.device)
        _scales_transposed_kernel[(_cdiv(M, 64), _cdiv(groups, 32))](
            a_scale, scales_t, M, groups, a_scale.stride(0), BLOCK_M=64, BLOCK_G=32, num_warps=4)
        a_scale, stride_asm, stride_asg = scales_t, 1, M
    if cfg.get("TMA", 0) and _tma_ok(a, b, split, cfg):
        from triton.tools.tensor_descriptor import TensorDescriptor

        rescale = bool(cfg.get("RESCALE", 0) and cfg["UPCAST"])  # zero scales need the pass's zeroed groups
        if cfg["UPCAST"]:
            a = _upcast(a, row_scales if rescale else None, 1, group_size)
            b = _upcast(b, b_scale if rescale else None, group_size, group_size)

        a_desc = TensorDescriptor(a, [M, K], [a.stride(0), 1], [bm, bk])
        b_desc = TensorDescriptor(b, [N, K], [b.stride(0), 1], [bn, bk])
        _gemm_fp8_blockscale_tma_kernel[grid](a_desc, a_scale, b_desc, b_scale, out, M, N, K, stride_asm, stride_asg,
                                              b_scale.stride(0), out.stride(0), GROUP=group_size,
                                              SB_SCALAR=group_size % bn == 0, RESCALE=rescale,
                                              BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                              GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=stages)
        return out
    _gemm_fp8_blockscale_kernel[grid](a, a_scale, b, b_scale, out, ws, M, N, K, k_per_split,
                                      a.stride(0), stride_asm, stride_asg, b.stride(0), b_scale.stride(0),
                                      out.stride(0),
                                      GROUP=group_size, SPLIT_K=split, UPCAST=bool(cfg["UPCAST"]),
                                      PREFETCH_SCALES=bool(cfg.get("PREFETCH_SCALES", 1)),
                                      SB_SCALAR=group_size % bn == 0,
                                      BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=cfg["GROUP_M"],
                                      num_warps=cfg["num_warps"], num_stages=stages)
    if split > 1:
        rb = min(REDUCE_BLOCK, _next_pow2(N))
        _gemm_fp8_splitk_reduce_kernel[(M, _cdiv(N, rb))](ws, out, M, N, out.stride(0), SPLIT_K=split,
                                                               BLOCK=rb, num_warps=4)
    return out


class Model(nn.Module):
    def __init__(self, out_dtype: str = "bfloat16", group_size: int = 128):
        super().__init__()
        self.out_dtype = getattr(torch, out_dtype)
        self.group_size = int(group_size)

    def forward(self, a, a_scale, b, b_scale):
        return launch_gemm_fp8_blockscale(a, a_scale, b, b_scale, self.out_dtype, self.group_size)
