"""Reference Triton kernel: y = act(x @ w^T + bias) * gate + residual with a fused epilogue.

Tiled tl.dot GEMM: one program per [BLOCK_M, BLOCK_N] output tile (x K split when SPLIT_K > 1), tiles
ordered in GROUP_M-tall column bands (L2 swizzle: a band of GROUP_M row blocks reuses each w tile while
it is hot in L2). Row/column indices of the operand loads wrap modulo M/N (no masks on the M/N edges;
out-of-range rows are computed and dropped at the store), only the K tail is masked. fp32 accumulation.
SPLIT_K == 1: the epilogue (bias, activation, gate, residual in fp32, one rounding) is applied on the
accumulator. SPLIT_K > 1: each split writes an fp32 partial tile to a workspace [SPLIT_K, M, N] and a
second kernel sums the partials in split order (deterministic) and applies the same epilogue.
"""

import torch
import triton
import triton.language as tl
from torch import nn
from triton.tools.tensor_descriptor import TensorDescriptor

TUNABLES = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1,
            "num_warps": 8, "num_stages": 4, "LARGE_M_MIN": 2048, "LARGE_M_BLOCK_M": 256,
            "SMALL_M_MAX": 64, "SMALL_M_BLOCK_N": 64, "SMALL_M_BLOCK_K": 256, "MID_M_MAX": 256, "MID_M_BLOCK_K": 128,
            "TMA": 1, "WARP_SPECIALIZE": 0, "UNDER_WAVE_BLOCK_M": 64, "FP32_TF32X3": 1,
            "FP32_TILES": 1, "STREAM_K": 0}
SEARCH_SPACE = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [32, 64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "SPLIT_K": [1, 2, 4, 8],
    "num_warps": [2, 4, 8],
    "num_stages": [2, 3, 4, 5],
    "LARGE_M_MIN": [0, 1024, 2048, 4096],
    "LARGE_M_BLOCK_M": [64, 128, 256],
    "SMALL_M_MAX": [0, 16, 32, 64],
    "SMALL_M_BLOCK_N": [32, 64, 128],
    "SMALL_M_BLOCK_K": [64, 128, 256],
    "MID_M_MAX": [0, 128, 256, 512],
    "MID_M_BLOCK_K": [64, 128],
    "TMA": [0, 1],
    "WARP_SPECIALIZE": [0, 1],
    "UNDER_WAVE_BLOCK_M": [0, 32, 64],
    "FP32_TF32X3": [0, 1],
    "FP32_TILES": [0, 1],
    "STREAM_K": [0, 1],
}
# M >= LARGE_M_MIN (0: never) uses LARGE_M_BLOCK_M rows per tile. An H200 agent session (2026-11-30) measured
# BLOCK_M 256 at 1.09x on an 8192-row down projection and 0.80x on 64- and 256-row decode GEMMs; the switch
# itself at 2048 against off, one grid sweep (phase ab2, 2026-11-30): 1.01x, 1.05x and 1.04x on the three
# prefill shapes (M 8192, 8192, 4096), decode shapes unchanged by construction.
# Decode GEMMs read the weights once and have few output tiles. M <= SMALL_M_MAX (0: never) takes one 64-row
# tile band of SMALL_M_BLOCK_N x SMALL_M_BLOCK_K steps, 4 warps, 4 stages, so N / BLOCK_N programs stream w with
# long K steps; SMALL_M_MAX < M <= MID_M_MAX takes the default tiles with MID_M_BLOCK_K. H200 sweep
# (scripts/gemm_configs_device.py, do_bench, 2026-12-03): M 64 x N 6144 x K 4096 24.7 us against 44.5 at the
# default tiles (cuBLAS 22.8); M 256 x 7168 x 8192 with SiLU 61.5 us against 79.7 (cuBLAS + torch SiLU 52.2).
# TMA (the large-M tiles' operands through tensor descriptors) and 4 stages, H200 (2026-12-03, do_bench, shuffled
# rounds): the down projection m8192 1535 -> 1460 us with TMA, 1443 with 4 stages; qkv m8192 444 -> 431 (4 stages
# level); starcoder2 fc m4096 2110 -> 1981, 1933 with 4 stages. WARP_SPECIALIZE changed nothing on Triton 3.6.
# Between the decode and the large-M tiles, a grid of default tiles that does not fill the GPU once (fewer output
# tiles than SMs) takes UNDER_WAVE_BLOCK_M-row tiles at 4 warps (0: never), twice the programs: H200 sweep
# (scripts/gemm_configs_device.py, do_bench, 2026-12-05) M 300 x N 2048 x K 1024, 48 tiles of 128 x 128 on 132
# SMs: 12.3 us at the default, 11.1 at 64 x 128 with 4 warps (the best of the grid; cuBLAS 9.3); M 1024 x 4096
# x 2048 (256 tiles) keeps the default tiles, the best there.
# float32 operands: FP32_TF32X3 (on) runs them as three TF32 tensor-core products (each operand split into a TF32
# part and a TF32 remainder), about fp32's accuracy at tensor-core rates; off, IEEE fp32 dots (FMA, no tensor
# cores). FP32_TILES (on) gives float32 operands their own tiles: 32-wide K steps, 3 stages, 128 x 128 tiles
# (8 warps for TF32 products, 4 for IEEE dots), 64 x 128 at 4 warps where 128-row tiles would not fill the GPU
# once; no decode, mid or large-M rule. H200 sweep (scripts/gemm_configs_device.py --dtype float32, do_bench,
# 2026-12-05): 4096^3 1687 us with TF32 products (IEEE dots at their best tiles 5328, at the bf16 defaults
# 53190; cuBLAS's IEEE SGEMM 2723), 300 x 2048 x 1024 45.8 us (IEEE 142.8, at the bf16 defaults 147.7; cuBLAS
# 47.5); max abs difference to the IEEE result 2.0e-5 at K 4096, 6.9e-6 at K 1024. Decode-sized float32 GEMMs
# were not measured.
# STREAM_K (off): a grid of tiles that does not fill the GPU once (the decode tiles: 64 x 6144 has 96 tiles of
# 64 x 64, 256 x 7168 112 of 128 x 128, on 132 SMs) runs as one program an SM, each taking an equal share of all
# tiles' K steps in order (stream-K). A program that ends inside a tile leaves its fp32 partial in a workspace slot
# and raises its flag; the program that finishes the tile adds the earlier programs' partials (in a fixed order:
# deterministic) and applies the epilogue. Programs wait only on lower program ids. H100 (do_bench, 2026-12-06,
# kb/experience/exp-h100-bf16-gemm-stream-k-refuted.md): 30.0 -> 31.7 us at 64 x 6144 x 4096, 68.6 -> 76.9 at
# 256 x 7168 x 8192 with SiLU: slower, so off.
INERT = {"LARGE_M_BLOCK_M": {"LARGE_M_MIN": [0]}, "SMALL_M_BLOCK_N": {"SMALL_M_MAX": [0]},
         "SMALL_M_BLOCK_K": {"SMALL_M_MAX": [0]}, "MID_M_BLOCK_K": {"MID_M_MAX": [0]},
         "WARP_SPECIALIZE": {"TMA": [0]}}

ACT_IDS = {"none": 0, "gelu_tanh": 1, "silu": 2, "sigmoid": 3}
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
def _linear_epilogue(z, offs_m, offs_n, mask, N, bias_ptr, res_ptr, stride_rm, gate_ptr, stride_gm,
                     ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, HAS_GATE: tl.constexpr):
    """z: fp32 [BM, BN] accumulator tile -> bias, activation, gate (a product), residual, all in fp32."""
    if HAS_BIAS:
        z += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    if ACT == 1:  # gelu, tanh approximation; tanh(u) = 1 - 2 / (exp(2u) + 1) saturates cleanly
        u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
        z = 0.5 * z * (2.0 - 2.0 / (tl.exp(2.0 * u) + 1.0))
    elif ACT == 2:  # silu
        z = z / (1.0 + tl.exp(-z))
    elif ACT == 3:  # sigmoid
        z = 1.0 / (1.0 + tl.exp(-z))
    if HAS_GATE:
        z *= tl.load(gate_ptr + offs_m.to(tl.int64)[:, None] * stride_gm + offs_n[None, :], mask=mask,
                     other=0.0).to(tl.float32)
    if HAS_RES:
        z += tl.load(res_ptr + offs_m.to(tl.int64)[:, None] * stride_rm + offs_n[None, :], mask=mask,
                     other=0.0).to(tl.float32)
    return z


@triton.jit
def _tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """GROUP_M swizzle: program pid's (row block, column block), walking a band of GROUP_M row blocks down each
    column of tiles."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    band = GROUP_M * tl.cdiv(N, BLOCK_N)
    first_m = (pid // band) * GROUP_M
    band_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (pid % band) % band_m, (pid % band) // band_m


@triton.jit
def _k_steps(acc, x_ptr, w_ptr, rows, cols, stride_xm, stride_wn, k_lo, k_hi, IEEE: tl.constexpr,
             TF32X3: tl.constexpr, BLOCK_K: tl.constexpr):
    """acc plus the tile's products over K in [k_lo, k_hi), BLOCK_K a step (rows and cols wrapped: only the K
    tail is masked)."""
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = x_ptr + rows[:, None] * stride_xm + (k_lo + offs_k)[None, :]
    b_ptrs = w_ptr + cols[None, :] * stride_wn + (k_lo + offs_k)[:, None]      # [BLOCK_K, BLOCK_N] view of w^T
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k_ok = (k0 + offs_k) < k_hi
        a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="tf32x3" if TF32X3 else "ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    return acc


@triton.jit
def _gemm_bf16_linear_epilogue_kernel(x_ptr, w_ptr, bias_ptr, res_ptr, gate_ptr, out_ptr, ws_ptr, M, N, K,
                                      k_per_split, stride_xm, stride_wn, stride_rm, stride_gm, stride_om,
                                      ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                                      HAS_GATE: tl.constexpr,
                                      SPLIT_K: tl.constexpr, IEEE: tl.constexpr, BLOCK_M: tl.constexpr,
                                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                                      TF32X3: tl.constexpr = False):
    pid_k = tl.program_id(1)
    pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = (offs_m % M).to(tl.int64)      # wrapped: loads need no M/N mask
    cols = (offs_n % N).to(tl.int64)
    k_lo = pid_k * k_per_split
    acc = _k_steps(tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32), x_ptr, w_ptr, rows, cols, stride_xm, stride_wn,
                   k_lo, tl.minimum(k_lo + k_per_split, K), IEEE, TF32X3, BLOCK_K)

    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    if SPLIT_K == 1:
        z = _linear_epilogue(acc, offs_m, offs_n, mask, N, bias_ptr, res_ptr, stride_rm, gate_ptr, stride_gm, ACT,
                             HAS_BIAS, HAS_RES, HAS_GATE)
        tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :],
                 z.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        ws = ws_ptr + (pid_k * M + offs_m.to(tl.int64))[:, None] * N + offs_n[None, :]
        tl.store(ws, acc, mask=mask)


@triton.jit(do_not_specialize=["epoch"])  # a new value every launch: not a compile-time constant
def _gemm_streamk_kernel(x_ptr, w_ptr, bias_ptr, res_ptr, gate_ptr, out_ptr, ws_ptr, flag_ptr, epoch, M, N, K,
                         stride_xm, stride_wn, stride_rm, stride_gm, stride_om,
                         ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, HAS_GATE: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Stream-K: program p of P takes K steps [p * total // P, (p + 1) * total // P) of the tiles' steps laid end to
    end (tile-major). A segment that reaches its tile's last step owns the tile: it waits for the flags of the
    programs before it that ended inside the tile, adds their partials and stores the tile; any other segment is
    its program's last, stored as a partial in the program's workspace slot, then flagged with this launch's epoch."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    iters = tl.cdiv(K, BLOCK_K)
    total = (tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N) * iters).to(tl.int64)
    start = pid * total // programs
    end = (pid + 1) * total // programs
    slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    it_end = end
    while it_end > start:  # the segments last to first: the partial (if any) is published before any wait
        tile = (it_end - 1) // iters
        seg_start = tl.maximum(start, tile * iters)
        pid_m, pid_n = _tile(tile.to(tl.int32), M, N, BLOCK_M, BLOCK_N, GROUP_M)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rows = (offs_m % M).to(tl.int64)
        cols = (offs_n % N).to(tl.int64)
        acc = _k_steps(tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32), x_ptr, w_ptr, rows, cols, stride_xm,
                       stride_wn, ((seg_start - tile * iters) * BLOCK_K).to(tl.int32),
                       tl.minimum((it_end - tile * iters) * BLOCK_K, K).to(tl.int32), False, False, BLOCK_K)
        if it_end == (tile + 1) * iters:  # this segment finishes the tile
            prev = pid - 1
            while (prev >= 0) & ((prev + 1) * total // programs > tile * iters):
                while tl.atomic_add(flag_ptr + prev, 0, sem="acquire") != epoch:
                    pass
                acc += tl.load(ws_ptr + prev.to(tl.int64) * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
                prev -= 1
            mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
            z = _linear_epilogue(acc, offs_m, offs_n, mask, N, bias_ptr, res_ptr, stride_rm, gate_ptr, stride_gm,
                                 ACT, HAS_BIAS, HAS_RES, HAS_GATE)
            tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :],
                     z.to(out_ptr.dtype.element_ty), mask=mask)
        else:  # the program's last segment, ending inside its tile: the partial for the tile's owner
            tl.store(ws_ptr + pid.to(tl.int64) * (BLOCK_M * BLOCK_N) + slot, acc, cache_modifier=".cg")
            tl.debug_barrier()
            tl.atomic_xchg(flag_ptr + pid, epoch, sem="release")
        it_end = seg_start


@triton.jit
def _gemm_tma_kernel(a_desc, b_desc, bias_ptr, res_ptr, gate_ptr, out_ptr, M, N, K, stride_rm, stride_gm, stride_om,
                     ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, HAS_GATE: tl.constexpr,
                     IEEE: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                     WS: tl.constexpr, TF32X3: tl.constexpr = False):
    """The same tile and epilogue, its operands brought in by the copy engine (TMA) through host-built
    descriptors: no address arithmetic or masks in the loop; the descriptor zero-fills past M, N and K.
    WS asks the compiler to split the loop into producer (TMA) and consumer (MMA) warps."""
    pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K, warp_specialize=WS):
        a = a_desc.load([pid_m * BLOCK_M, k0])
        b = b_desc.load([pid_n * BLOCK_N, k0])
        if IEEE:
            acc = tl.dot(a, b.T, acc, input_precision="tf32x3" if TF32X3 else "ieee")
        else:
            acc = tl.dot(a, b.T, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    z = _linear_epilogue(acc, offs_m, offs_n, mask, N, bias_ptr, res_ptr, stride_rm, gate_ptr, stride_gm, ACT,
                         HAS_BIAS, HAS_RES, HAS_GATE)
    tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :],
             z.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gemm_splitk_reduce_kernel(ws_ptr, bias_ptr, res_ptr, gate_ptr, out_ptr, M, N, stride_rm, stride_gm, stride_om,
                               ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                               HAS_GATE: tl.constexpr,
                               SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_m = tl.zeros([1], dtype=tl.int32) + row
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    z = tl.zeros([1, BLOCK], dtype=tl.float32)
    for s in range(SPLIT_K):                     # fixed order: deterministic
        z += tl.load(ws_ptr + (s * M + offs_m.to(tl.int64))[:, None] * N + offs_n[None, :], mask=mask, other=0.0)
    z = _linear_epilogue(z, offs_m, offs_n, mask, N, bias_ptr, res_ptr, stride_rm, gate_ptr, stride_gm, ACT,
                         HAS_BIAS, HAS_RES, HAS_GATE)
    tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :],
             z.to(out_ptr.dtype.element_ty), mask=mask)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _tma_ok(x: torch.Tensor, w: torch.Tensor) -> bool:
    """A TMA descriptor needs 16-byte aligned base addresses and row strides."""
    return all(t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0 for t in (x, w))


def _tiles(M: int, N: int, cfg: dict, sms: int) -> tuple[int, int, int, int, int, bool]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, large) for M rows and N columns on `sms` SMs (0: not
    known, or not needed): the decode, mid and large-M rules above, else the default tiles, with fewer rows per
    tile where the default grid would not fill the GPU once."""
    bm, bn, bk, warps, stages = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["num_warps"], cfg["num_stages"]
    if M <= cfg.get("SMALL_M_MAX", 0):
        return 64, cfg["SMALL_M_BLOCK_N"], cfg["SMALL_M_BLOCK_K"], 4, 4, False
    if M <= cfg.get("MID_M_MAX", 0):
        return bm, bn, cfg["MID_M_BLOCK_K"], warps, stages, False
    if cfg.get("LARGE_M_MIN") and M >= cfg["LARGE_M_MIN"]:
        return cfg["LARGE_M_BLOCK_M"], bn, bk, warps, stages, True
    under = cfg.get("UNDER_WAVE_BLOCK_M", 0)
    if under and under < bm and cfg["SPLIT_K"] == 1 and _cdiv(M, bm) * _cdiv(N, bn) < sms:
        return under, bn, bk, 4, stages, False
    return bm, bn, bk, warps, stages, False


def _fp32_tiles(M: int, N: int, tf32x3: bool, sms: int) -> tuple[int, int, int, int, int, bool]:
    """The float32 operands' tiles (FP32_TILES; see above), in `_tiles`'s form."""
    if sms and _cdiv(M, 128) * _cdiv(N, 128) < sms:
        return 64, 128, 32, 4, 3, False
    return 128, 128, 32, 8 if tf32x3 else 4, 3, False


_SMS: dict[int, int] = {}


def _sm_count(device: torch.device) -> int:
    """Multiprocessors of a CUDA device (cached: the property query costs microseconds); 0 elsewhere."""
    if device.type != "cuda":
        return 0
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


_STREAMK_SCRATCH: dict[tuple[str, int | None], tuple[torch.Tensor, torch.Tensor, list[int]]] = {}


def _streamk_scratch(device: torch.device, programs: int, tile_elems: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(workspace, flags, epoch) for a stream-K launch: an fp32 partial-tile slot and an int32 flag a program,
    kept per device and grown as needed; each launch raises flags to a new epoch, so they are never cleared.
    One stream at a time: two launches in flight on different streams of a device would share the slots."""
    key = (device.type, device.index)
    ws, flags, epoch = _STREAMK_SCRATCH.get(key, (None, None, [0]))
    if ws is None or ws.numel() < programs * tile_elems or flags.numel() < programs:
        ws = torch.empty(programs * tile_elems, dtype=torch.float32, device=device)
        flags = torch.zeros(programs, dtype=torch.int32, device=device)
        epoch = [0]
        _STREAMK_SCRATCH[key] = (ws, flags, epoch)
    epoch[0] = epoch[0] % (2 ** 30) + 1
    return ws, flags, epoch[0]


def _launch_streamk(x, w, bias_arg, res_arg, gate_arg, out, strides: tuple[int, int, int], flags_of: tuple,
                    tiles: tuple[int, int, int, int, int], group_m: int, programs: int) -> None:
    """The stream-K kernel on `programs` programs (one an SM on a GPU)."""
    bm, bn, bk, warps, stages = tiles
    M, K = x.shape
    N = w.shape[0]
    ws, flags, epoch = _streamk_scratch(x.device, programs, bm * bn)
    act, has_bias, has_res, has_gate = flags_of
    _gemm_streamk_kernel[(programs,)](x, w, bias_arg, res_arg, gate_arg, out, ws, flags, epoch, M, N, K,
                                      x.stride(0), w.stride(0), *strides, ACT=act, HAS_BIAS=has_bias,
                                      HAS_RES=has_res, HAS_GATE=has_gate, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                      GROUP_M=group_m, num_warps=warps, num_stages=stages)


def launch_gemm_bf16_linear_epilogue(x, w, bias, residual, activation: str, cfg: dict = TUNABLES, gate=None):
    if x.stride(-1) != 1:
        x = x.contiguous()
    if w.stride(-1) != 1:
        w = w.contiguous()
    M, K = x.shape
    N = w.shape[0]
    out = x.new_empty((M, N))
    if M == 0 or N == 0:
        return out
    has_bias, has_res = bias is not None, residual is not None
    if has_res and residual.stride(-1) != 1:
        residual = residual.contiguous()
    bias_arg = bias if has_bias else x
    res_arg = residual if has_res else x
    stride_rm = residual.stride(0) if has_res else 0
    has_gate = gate is not None
    if has_gate and gate.stride(-1) != 1:
        gate = gate.contiguous()
    gate_arg = gate if has_gate else x
    stride_gm = gate.stride(0) if has_gate else 0
    split = cfg["SPLIT_K"]
    ieee = x.dtype == torch.float32
    tf32x3 = ieee and bool(cfg.get("FP32_TF32X3", 0))
    if ieee and cfg.get("FP32_TILES", 0):
        bm, bn, bk, warps, stages, large = _fp32_tiles(M, N, tf32x3, _sm_count(x.device))
    else:
        bm, bn, bk, warps, stages, large = _tiles(M, N, cfg, _sm_count(x.device) if M > cfg.get("MID_M_MAX", 0)
                                                  else 0)
    stages, bk = _fit_smem(stages, bk, (bm + bn) * x.element_size())
    act = ACT_IDS[activation]
    if split == 1 and cfg.get("TMA") and large and _tma_ok(x, w):  # the large-M tiles only (where timed)
        grid = (_cdiv(M, bm) * _cdiv(N, bn),)
        _gemm_tma_kernel[grid](TensorDescriptor.from_tensor(x, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk]),
                               bias_arg, res_arg, gate_arg, out, M, N, K, stride_rm, stride_gm, out.stride(0),
                               ACT=act, HAS_BIAS=has_bias, HAS_RES=has_res, HAS_GATE=has_gate, IEEE=ieee, TF32X3=tf32x3,
                               BLOCK_M=bm,
                               BLOCK_N=bn, BLOCK_K=bk, GROUP_M=cfg["GROUP_M"],
                               WS=bool(cfg.get("WARP_SPECIALIZE", 0)), num_warps=warps, num_stages=stages)
        return out
    sms = _sm_count(x.device) if cfg.get("STREAM_K", 0) and split == 1 and not ieee else 0
    if sms and _cdiv(M, bm) * _cdiv(N, bn) < sms:  # the tiles leave SMs idle: every SM takes a share of the K steps
        _launch_streamk(x, w, bias_arg, res_arg, gate_arg, out, (stride_rm, stride_gm, out.stride(0)),
                        (act, has_bias, has_res, has_gate), (bm, bn, bk, warps, stages), cfg["GROUP_M"], sms)
        return out
    k_per_split = _cdiv(_cdiv(K, bk), split) * bk
    ws = torch.empty((split, M, N), dtype=torch.float32, device=x.device) if split > 1 else out
    grid = (_cdiv(M, bm) * _cdiv(N, bn), split)
    _gemm_bf16_linear_epilogue_kernel[grid](x, w, bias_arg, res_arg, gate_arg, out, ws, M, N, K, k_per_split,
                                            x.stride(0), w.stride(0), stride_rm, stride_gm, out.stride(0),
                                            ACT=act, HAS_BIAS=has_bias, HAS_RES=has_res, HAS_GATE=has_gate,
                                            SPLIT_K=split,
                                            IEEE=ieee, TF32X3=tf32x3, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                            GROUP_M=cfg["GROUP_M"], num_warps=warps, num_stages=stages)
    if split > 1:
        rb = min(REDUCE_BLOCK, _next_pow2(N))
        _gemm_splitk_reduce_kernel[(M, _cdiv(N, rb))](ws, bias_arg, res_arg, gate_arg, out, M, N, stride_rm,
                                                           stride_gm, out.stride(0), ACT=act, HAS_BIAS=has_bias,
                                                           HAS_RES=has_res, HAS_GATE=has_gate, SPLIT_K=split,
                                                           BLOCK=rb,
                                                           num_warps=4)
    return out


class Model(nn.Module):
    def __init__(self, activation: str = "none", has_bias: bool = False, has_residual: bool = False,
                 has_gate: bool = False):
        super().__init__()
        if activation not in ACT_IDS:
            raise ValueError(f"activation must be one of {tuple(ACT_IDS)}, not {activation!r}")
        self.activation = activation
        self.has_bias = bool(has_bias)
        self.has_residual = bool(has_residual)
        self.has_gate = bool(has_gate)

    def forward(self, x, w, bias=None, residual=None, gate=None):
        return launch_gemm_bf16_linear_epilogue(x, w, bias if self.has_bias else None,
                                                residual if self.has_residual else None, self.activation,
                                                gate=gate if self.has_gate else None)
