"""Reference Triton kernels: fused MoE SwiGLU experts with top-k weighted combine.

Pipeline (all Triton; torch only allocates):
  1. routing schedule (deterministic counting sort, as in moe_align_sort, block = BLOCK_M):
     _moe_route_count_kernel, _moe_route_scan_kernel, _moe_route_sort_kernel give sorted_ids (pair
     indices t*k + j grouped by expert, each expert padded to a multiple of BLOCK_M with the sentinel
     n = T*k) and expert_ids (the expert of each BLOCK_M block, -1 for unused blocks).
  2. _moe_fused_experts_kernel: one program per (M block, N tile of I) (GROUP_M L2 swizzle); gathers the
     block's token rows of hidden, runs two tl.dot accumulators (gate rows and up rows of w1[e]) over H,
     applies silu(gate) * up in fp32 and stores the activation, rounded to the input dtype, into a
     block-padded buffer act[len, I].
  3. _moe_down_kernel: one program per (M block, N tile of H); act rows @ w2[e]^T over I, times the
     routing weight of each pair, stored at row = pair index of y[T*k, H] (fp32 or input dtype).
  4. _moe_combine_kernel: out[t] = sum_j y[t*k + j] in slot order (fp32, deterministic, no atomics).
Programs of unused blocks exit at once. Operand loads wrap their column index modulo the matrix size
(no N masks), gathered rows of padding slots are masked to zero; fp32 inputs use IEEE dots.

Block-scaled weights (w1_scale, w2_scale given; w8a16 / w8a8 as in DeepSeek-V3 serving): w1 [E, 2I, H] and
w2 [E, H, I] hold fp8 e4m3 values (or any float) with one fp32 scale per [block_n, block_k] block of each
expert's matrix (w1_scale [E, ceil(2I/bn), ceil(H/bk)], w2_scale [E, ceil(H/bn), ceil(I/bk)]); a1_scale
[T, ceil(H/ga)] scales hidden per token and group of ga columns (hidden quantised per token group, given
with its scales). Block sizes are read from the scale shapes (the power of two whose ceil-division gives the
scale's extent). A constexpr branch of both GEMM kernels then runs BLOCK_K steps inside one scale group (BLOCK_K
clamped to the group): each step's tl.dot starts from zero and is added to the fp32 accumulator times the
row's activation scale and the column's weight scale, as the knowledge base's block-scaled fp8 GEMM does.
Operands: fp8 x fp8 tl.dot when hidden and weights are both e4m3fn; else both converted (exactly) to fp16
for fp8 activations, or to the activations' dtype (bf16 / fp16; fp32 with IEEE dots). The AMD "fnuz" e4m3
encoding, which NVIDIA Triton cannot type, is read through uint8 views and decoded in registers (exact), and
an fnuz output is encoded in software as torch rounds (nearest even, NaN past 248). Where a tile lies inside
one block of weight rows (BLOCK_N clamped to the block when the matrix divides into blocks) the weight scale
of a K step is one scalar. With fp8 activations the SwiGLU activation stays fp32 (nothing requantises it: a
bf16 buffer put a published layer's cancelling O(100) sums 0.25 off, twice its absolute tolerance); on a
GPU the down GEMM then splits each fp32 act tile into a bf16 high and low part, two bf16 dots on the exact
bf16 weights (ACT_SPLIT; an fp32 IEEE dot on the interpreter, whose bf16 dots are not reliable). Other
activations keep the input dtype, as without scales. Without scales nothing of this is compiled: the plain
path is unchanged.

Plain-path variants: GATE_UP_JOINT (on) loads the gate and up weight rows interleaved as one operand for one dot
twice as wide (H200: Qwen3-30B-A3B prefill t8192 1514 -> 1469 us in a sweep, 1.447 -> 1.385 ms in the suite;
decode shapes unchanged); TMA (off) brings the weight tiles (and the down GEMM's act rows, which are the block's
own) in through tensor descriptors: 2.4% at that prefill, 2.8% at the DeepSeek-V3 decode slice, 29% slower at
the Qwen3 decode batch.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn
from triton.tools.tensor_descriptor import TensorDescriptor

TUNABLES = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "DOWN_BLOCK_N": 256, "DOWN_BLOCK_K": 64,
            "GROUP_M": 8, "PAIR_FP32": 0, "ROUTE_CHUNK": 1024, "num_warps": 8, "num_stages": 3,
            "SMALL_MAX_PAIRS_PER_EXPERT": 32, "SMALL_BLOCK_M": 32, "SMALL_BLOCK_N": 64, "SMALL_BLOCK_K": 128,
            "SMALL_DOWN_BLOCK_N": 64, "SMALL_DOWN_BLOCK_K": 128, "SMALL_WARPS": 4, "ACT_SPLIT": 1,
            "GATE_UP_JOINT": 1, "TMA": 0, "HALF_M_GAIN": 0, "HALF_M_WARPS": 0,
            "NARROW_N_GAIN": 20}
SEARCH_SPACE = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [32, 64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "DOWN_BLOCK_N": [32, 64, 128, 256],
    "DOWN_BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "PAIR_FP32": [0, 1],
    "ROUTE_CHUNK": [256, 1024, 4096],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4],
    "SMALL_MAX_PAIRS_PER_EXPERT": [0, 8, 32, 128],
    "SMALL_BLOCK_M": [16, 32, 64],
    "SMALL_BLOCK_N": [32, 64, 128],
    "SMALL_BLOCK_K": [64, 128, 256],
    "SMALL_DOWN_BLOCK_N": [32, 64, 128],
    "SMALL_DOWN_BLOCK_K": [64, 128, 256],
    "SMALL_WARPS": [2, 4, 8],
    "ACT_SPLIT": [0, 1],
    "GATE_UP_JOINT": [0, 1],
    "TMA": [0, 1],
    "HALF_M_GAIN": [0, 10, 25, 40],
    "HALF_M_WARPS": [0, 4, 8],
    "NARROW_N_GAIN": [0, 10, 20, 35],
}
# Decode-sized batches (few (token, expert) pairs per expert) run the SMALL_* tiles instead; with
# SMALL_MAX_PAIRS_PER_EXPERT 0 there is no such regime.
INERT = {"SMALL_BLOCK_M": {"SMALL_MAX_PAIRS_PER_EXPERT": [0]},
         "SMALL_BLOCK_N": {"SMALL_MAX_PAIRS_PER_EXPERT": [0]},
         "SMALL_BLOCK_K": {"SMALL_MAX_PAIRS_PER_EXPERT": [0]},
         "SMALL_DOWN_BLOCK_N": {"SMALL_MAX_PAIRS_PER_EXPERT": [0]},
         "SMALL_DOWN_BLOCK_K": {"SMALL_MAX_PAIRS_PER_EXPERT": [0]},
         "SMALL_WARPS": {"SMALL_MAX_PAIRS_PER_EXPERT": [0]},
         "HALF_M_WARPS": {"HALF_M_GAIN": [0]}}

ROUTE_SUB = 64
# Routing programs aimed for: a chunk is the smallest power of two (at least ROUTE_SUB, at most ROUTE_CHUNK) that
# keeps the count and sort kernels at about this many programs. One 1024-pair chunk per program left a decode
# batch (512 pairs) to a single program walking 16 sub-chunks: 65 us of a 563 us call on an H200 (2026-12-03).
ROUTE_PROGRAMS = 128
SCAN_CHUNKS = 16
COMBINE_BLOCK = 1024
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


def _max_padded_len(num_pairs: int, num_experts: int, block: int) -> int:
    bound = num_pairs + min(num_experts, num_pairs) * (block - 1)
    return (bound + block - 1) // block * block


# ---------------------------------------------------------------- routing schedule (counting sort)
@triton.jit
def _moe_route_count_kernel(ids_ptr, counts_ptr, sorted_ptr, n, n_experts, length, fill_per_prog,
                            CHUNK: tl.constexpr, SUB: tl.constexpr, BLOCK_E: tl.constexpr):
    c = tl.program_id(0)
    experts = tl.arange(0, BLOCK_E)
    cnt = tl.zeros([BLOCK_E], dtype=tl.int32)
    for s in range(0, CHUNK, SUB):
        idx = c * CHUNK + s + tl.arange(0, SUB)
        e = tl.load(ids_ptr + idx, mask=idx < n, other=-1).to(tl.int32)
        cnt += tl.sum((e[:, None] == experts[None, :]).to(tl.int32), axis=0)
    tl.store(counts_ptr + c * n_experts + experts, cnt, mask=experts < n_experts)
    lo = c * fill_per_prog
    hi = tl.minimum(lo + fill_per_prog, length)
    for p in range(lo, hi, SUB):
        pos = p + tl.arange(0, SUB)
        tl.store(sorted_ptr + pos, tl.zeros([SUB], dtype=tl.int32) + n, mask=pos < hi)


@triton.jit
def _moe_route_scan_kernel(counts_ptr, block_end_ptr, n_chunks, n_experts, block,
                           SCAN_CHUNKS: tl.constexpr, BLOCK_E: tl.constexpr):
    experts = tl.arange(0, BLOCK_E)
    e_ok = experts < n_experts
    crow = tl.arange(0, SCAN_CHUNKS)
    total = tl.zeros([BLOCK_E], dtype=tl.int32)
    for c0 in range(0, n_chunks, SCAN_CHUNKS):
        rows = c0 + crow
        m = (rows < n_chunks)[:, None] & e_ok[None, :]
        total += tl.sum(tl.load(counts_ptr + rows[:, None] * n_experts + experts[None, :], mask=m, other=0), axis=0)
    padded = (total + block - 1) // block * block
    incl = tl.cumsum(padded, axis=0)
    tl.store(block_end_ptr + experts, incl // block, mask=e_ok)
    run = incl - padded
    for c0 in range(0, n_chunks, SCAN_CHUNKS):
        rows = c0 + crow
        m = (rows < n_chunks)[:, None] & e_ok[None, :]
        ptrs = counts_ptr + rows[:, None] * n_experts + experts[None, :]
        tile = tl.load(ptrs, mask=m, other=0)
        tl.store(ptrs, run[None, :] + tl.cumsum(tile, axis=0) - tile, mask=m)
        run += tl.sum(tile, axis=0)


@triton.jit
def _moe_route_sort_kernel(ids_ptr, offsets_ptr, block_end_ptr, sorted_ptr, expert_ids_ptr, n, n_experts,
                           n_blocks, blocks_per_prog, CHUNK: tl.constexpr, SUB: tl.constexpr,
                           BLOCK_E: tl.constexpr):
    c = tl.program_id(0)
    experts = tl.arange(0, BLOCK_E)
    e_ok = experts < n_experts
    run = tl.load(offsets_ptr + c * n_experts + experts, mask=e_ok, other=0)
    for s in range(0, CHUNK, SUB):
        idx = c * CHUNK + s + tl.arange(0, SUB)
        ok = idx < n
        e = tl.load(ids_ptr + idx, mask=ok, other=-1).to(tl.int32)
        onehot = (e[:, None] == experts[None, :]).to(tl.int32)
        rank = tl.sum(onehot * tl.cumsum(onehot, axis=0), axis=1) - 1
        dest = tl.sum(onehot * run[None, :], axis=1) + rank
        tl.store(sorted_ptr + dest, idx, mask=ok)
        run += tl.sum(onehot, axis=0)
    bend = tl.load(block_end_ptr + experts, mask=e_ok, other=2147483647)
    lo = c * blocks_per_prog
    hi = tl.minimum(lo + blocks_per_prog, n_blocks)
    for b0 in range(lo, hi, SUB):
        b = b0 + tl.arange(0, SUB)
        owner = tl.sum((bend[None, :] <= b[:, None]).to(tl.int32), axis=1)
        tl.store(expert_ids_ptr + b, tl.where(owner < n_experts, owner, -1), mask=b < hi)


# ---------------------------------------------------------------- tile order
@triton.jit
def _swizzle(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    band = GROUP_M * num_pid_n
    first_m = (pid // band) * GROUP_M
    band_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (pid % band) % band_m, (pid % band) // band_m


# ---------------------------------------------------------------- block-scaled operands (constexpr branches)
@triton.jit
def _fnuz_to_fp16(bits):
    """float8_e4m3fnuz codes (uint8) as fp16 values, exactly: the code's exponent and mantissa bits placed in
    an fp16 (bias 15 instead of 8) read 2^-7 of the value, normal and subnormal codes alike; times 128. The
    NaN code 0x80 reads as -0 (quantised tensors hold none)."""
    u = bits.to(tl.uint16)
    h = (((u & 0x7F) << 7) | ((u & 0x80) << 8)).to(tl.float16, bitcast=True)
    return h * 128.0


@triton.jit
def _e4m3fnuz_bits(x):
    """fp32 x as float8_e4m3fnuz codes, as torch converts (c10 fp8e4m3fnuz_from_fp32_value): nearest even,
    subnormals through a magic-number add, |x| >= 256 after rounding (and inf, NaN) the NaN code 0x80, no -0."""
    f = x.to(tl.int32, bitcast=True)
    neg = f < 0
    f = f & 0x7FFFFFFF
    sub = (f.to(tl.float32, bitcast=True) + 8192.0).to(tl.int32, bitcast=True) - (0x8C << 23)
    nrm = (f - (119 << 23) + 0x7FFFF + ((f >> 20) & 1)) >> 20
    r = tl.where(f < (0x78 << 23), sub, nrm)
    r = tl.where(neg & (r != 0), r | 0x80, r)
    r = tl.where(f >= (0x87 << 23), 0x80, r)
    return r.to(tl.uint8)


@triton.jit
def _operand(x, FNUZ: tl.constexpr, DT: tl.constexpr):
    """A loaded tile in the dot's operand dtype (fnuz codes decoded first; every conversion here is exact)."""
    if FNUZ:
        x = _fnuz_to_fp16(x)
    return x.to(DT)


@triton.jit
def _dot(a, b, IEEE: tl.constexpr):
    if IEEE:
        return tl.dot(a, b, input_precision="ieee")
    return tl.dot(a, b)


@triton.jit
def _promote(partial, sa, sw, A_SCALE: tl.constexpr, W_SCALE: tl.constexpr, W_SCALAR: tl.constexpr):
    """One K step's dot times its scales: sa [BLOCK_M] per row; sw per column, or one scalar when the tile lies
    inside one scale block (a [BLOCK_N] vector costs a layout conversion through shared memory every step)."""
    if A_SCALE:
        if W_SCALE:
            if W_SCALAR:
                return partial * (sa * sw)[:, None]
            return partial * sa[:, None] * sw[None, :]
        return partial * sa[:, None]
    if W_SCALE:
        if W_SCALAR:
            return partial * sw
        return partial * sw[None, :]
    return partial


# ---------------------------------------------------------------- expert GEMMs
@triton.jit
def _moe_fused_experts_kernel(x_ptr, w1_ptr, sorted_ptr, expert_ids_ptr, act_ptr, n_pairs, top_k, H, I,
                              num_pid_m, stride_xt, stride_we, stride_wn, stride_am,
                              as_ptr, ws_ptr, stride_ast, stride_asg, stride_wse, stride_wsn, stride_wsk,
                              IEEE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                              SCALED: tl.constexpr, A_SCALE: tl.constexpr, W_SCALE: tl.constexpr,
                              A_FNUZ: tl.constexpr, W_FNUZ: tl.constexpr, DOT_DT: tl.constexpr,
                              GA: tl.constexpr, GN: tl.constexpr, GK: tl.constexpr, W_SCALAR: tl.constexpr,
                              JOINT: tl.constexpr = False, w1_desc=None, TMA: tl.constexpr = False):
    """act[pos, :] = silu(x[tok] @ w1[e, :I]^T) * (x[tok] @ w1[e, I:]^T) for the BLOCK_M slots of one block.
    SCALED: operands converted to DOT_DT, every BLOCK_K step (inside one scale group) promoted with the row's
    activation scale as[tok, k // GA] and the column's weight scale ws[e, row // GN, k // GK] (W_SCALAR: the
    tile's gate rows share one scale row, and so do its up rows)."""
    pid_m, pid_n = _swizzle(tl.program_id(0), num_pid_m, tl.cdiv(I, BLOCK_N), GROUP_M)
    e = tl.load(expert_ids_ptr + pid_m)
    if e >= 0:
        pos = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        pair = tl.load(sorted_ptr + pos)
        valid = pair < n_pairs
        tok = tl.where(valid, pair // top_k, 0).to(tl.int64)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        cols = (offs_n % I).to(tl.int64)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = x_ptr + tok[:, None] * stride_xt + offs_k[None, :]
        g_ptrs = w1_ptr + e.to(tl.int64) * stride_we + cols[None, :] * stride_wn + offs_k[:, None]
        u_ptrs = g_ptrs + I * stride_wn
        acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        if SCALED:
            sa_ptrs = as_ptr + tok * stride_ast
            if W_SCALAR:
                sg_ptrs = ws_ptr + e.to(tl.int64) * stride_wse + ((pid_n * BLOCK_N) // GN) * stride_wsn
                su_ptrs = ws_ptr + e.to(tl.int64) * stride_wse + ((pid_n * BLOCK_N + I) // GN) * stride_wsn
            else:
                sg_ptrs = ws_ptr + e.to(tl.int64) * stride_wse + (cols // GN) * stride_wsn
                su_ptrs = ws_ptr + e.to(tl.int64) * stride_wse + ((cols + I) // GN) * stride_wsn
            for k0 in range(0, H, BLOCK_K):
                k_ok = (k0 + offs_k) < H
                sa = 1.0
                sg = 1.0
                su = 1.0
                if A_SCALE:  # the step's scales first: their loads overlap the tiles' and the dots
                    sa = tl.load(sa_ptrs + (k0 // GA) * stride_asg)
                if W_SCALE:
                    sg = tl.load(sg_ptrs + (k0 // GK) * stride_wsk)
                    su = tl.load(su_ptrs + (k0 // GK) * stride_wsk)
                a = _operand(tl.load(a_ptrs, mask=valid[:, None] & k_ok[None, :], other=0.0), A_FNUZ, DOT_DT)
                wg = _operand(tl.load(g_ptrs, mask=k_ok[:, None], other=0.0), W_FNUZ, DOT_DT)
                wu = _operand(tl.load(u_ptrs, mask=k_ok[:, None], other=0.0), W_FNUZ, DOT_DT)
                acc_g += _promote(_dot(a, wg, IEEE), sa, sg, A_SCALE, W_SCALE, W_SCALAR)
                acc_u += _promote(_dot(a, wu, IEEE), sa, su, A_SCALE, W_SCALE, W_SCALAR)
                a_ptrs += BLOCK_K
                g_ptrs += BLOCK_K
                u_ptrs += BLOCK_K
        elif TMA:  # weight tiles through a [E, 2I, H] descriptor (rows past 2I zero-filled; past I masked below)
            for k0 in range(0, H, BLOCK_K):
                k_ok = (k0 + offs_k) < H
                a = tl.load(a_ptrs, mask=valid[:, None] & k_ok[None, :], other=0.0)
                wg = w1_desc.load([e, pid_n * BLOCK_N, k0]).reshape(BLOCK_N, BLOCK_K)
                wu = w1_desc.load([e, I + pid_n * BLOCK_N, k0]).reshape(BLOCK_N, BLOCK_K)
                if IEEE:
                    acc_g = tl.dot(a, wg.T, acc_g, input_precision="ieee")
                    acc_u = tl.dot(a, wu.T, acc_u, input_precision="ieee")
                else:
                    acc_g = tl.dot(a, wg.T, acc_g)
                    acc_u = tl.dot(a, wu.T, acc_u)
                a_ptrs += BLOCK_K
        elif JOINT:
            # gate and up columns interleaved in one [BLOCK_K, 2 * BLOCK_N] operand: one dot twice as wide (a
            # single N=256 wgmma on Hopper instead of two N=128 ones sharing A), split back after the loop.
            j = tl.arange(0, 2 * BLOCK_N)
            rows = ((j % 2) * I + (pid_n * BLOCK_N + j // 2) % I).to(tl.int64)
            w_ptrs = w1_ptr + e.to(tl.int64) * stride_we + rows[None, :] * stride_wn + offs_k[:, None]
            acc = tl.zeros([BLOCK_M, 2 * BLOCK_N], dtype=tl.float32)
            for k0 in range(0, H, BLOCK_K):
                k_ok = (k0 + offs_k) < H
                a = tl.load(a_ptrs, mask=valid[:, None] & k_ok[None, :], other=0.0)
                w = tl.load(w_ptrs, mask=k_ok[:, None], other=0.0)
                if IEEE:
                    acc = tl.dot(a, w, acc, input_precision="ieee")
                else:
                    acc = tl.dot(a, w, acc)
                a_ptrs += BLOCK_K
                w_ptrs += BLOCK_K
            acc_g, acc_u = tl.split(tl.reshape(acc, [BLOCK_M, BLOCK_N, 2]))
        else:
            for k0 in range(0, H, BLOCK_K):
                k_ok = (k0 + offs_k) < H
                a = tl.load(a_ptrs, mask=valid[:, None] & k_ok[None, :], other=0.0)
                wg = tl.load(g_ptrs, mask=k_ok[:, None], other=0.0)
                wu = tl.load(u_ptrs, mask=k_ok[:, None], other=0.0)
                if IEEE:
                    acc_g = tl.dot(a, wg, acc_g, input_precision="ieee")
                    acc_u = tl.dot(a, wu, acc_u, input_precision="ieee")
                else:
                    acc_g = tl.dot(a, wg, acc_g)
                    acc_u = tl.dot(a, wu, acc_u)
                a_ptrs += BLOCK_K
                g_ptrs += BLOCK_K
                u_ptrs += BLOCK_K
        act = acc_g / (1.0 + tl.exp(-acc_g)) * acc_u
        mask = valid[:, None] & (offs_n < I)[None, :]
        tl.store(act_ptr + pos.to(tl.int64)[:, None] * stride_am + offs_n[None, :],
                 act.to(act_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _moe_down_kernel(act_ptr, w2_ptr, sorted_ptr, expert_ids_ptr, tw_ptr, y_ptr, n_pairs, H, I, num_pid_m,
                     stride_am, stride_we, stride_wn, stride_ym, ws_ptr, stride_wse, stride_wsn, stride_wsk,
                     IEEE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                     SCALED: tl.constexpr, W_SCALE: tl.constexpr, W_FNUZ: tl.constexpr, DOT_DT: tl.constexpr,
                     GN: tl.constexpr, GK: tl.constexpr, W_SCALAR: tl.constexpr, SPLIT: tl.constexpr,
                     act_desc=None, w2_desc=None, TMA: tl.constexpr = False):
    """y[pair, :] = topk_weight[pair] * (act[pos] @ w2[e]^T) for the BLOCK_M slots of one block (SCALED: w2
    tiles converted to DOT_DT, every K step promoted with the column's weight scale; SPLIT: fp32 act tiles as
    a bf16 high part plus a bf16 low part, two bf16 dots, ~16 bits of the act's mantissa kept)."""
    pid_m, pid_n = _swizzle(tl.program_id(0), num_pid_m, tl.cdiv(H, BLOCK_N), GROUP_M)
    e = tl.load(expert_ids_ptr + pid_m)
    if e >= 0:
        pos = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        pair = tl.load(sorted_ptr + pos)
        valid = pair < n_pairs
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        cols = (offs_n % H).to(tl.int64)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = act_ptr + pos.to(tl.int64)[:, None] * stride_am + offs_k[None, :]
        b_ptrs = w2_ptr + e.to(tl.int64) * stride_we + cols[None, :] * stride_wn + offs_k[:, None]
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        if SCALED:
            if W_SCALAR:
                sb_ptrs = ws_ptr + e.to(tl.int64) * stride_wse + ((pid_n * BLOCK_N) // GN) * stride_wsn
            else:
                sb_ptrs = ws_ptr + e.to(tl.int64) * stride_wse + (cols // GN) * stride_wsn
            for k0 in range(0, I, BLOCK_K):
                k_ok = (k0 + offs_k) < I
                sb = 1.0
                if W_SCALE:
                    sb = tl.load(sb_ptrs + (k0 // GK) * stride_wsk)
                a = tl.load(a_ptrs, mask=valid[:, None] & k_ok[None, :], other=0.0)
                b = _operand(tl.load(b_ptrs, mask=k_ok[:, None], other=0.0), W_FNUZ, DOT_DT)
                if SPLIT:
                    hi = a.to(tl.bfloat16)
                    lo = (a - hi.to(tl.float32)).to(tl.bfloat16)
                    partial = tl.dot(lo, b, tl.dot(hi, b))
                else:
                    partial = _dot(a.to(DOT_DT), b, IEEE)
                acc += _promote(partial, 1.0, sb, False, W_SCALE, W_SCALAR)
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K
        elif TMA:  # act rows are the block's own (padding rows hold garbage: their outputs are masked below)
            for k0 in range(0, I, BLOCK_K):
                a = act_desc.load([pid_m * BLOCK_M, k0])
                b = w2_desc.load([e, pid_n * BLOCK_N, k0]).reshape(BLOCK_N, BLOCK_K)
                if IEEE:
                    acc = tl.dot(a, b.T, acc, input_precision="ieee")
                else:
                    acc = tl.dot(a, b.T, acc)
        else:
            for k0 in range(0, I, BLOCK_K):
                k_ok = (k0 + offs_k) < I
                a = tl.load(a_ptrs, mask=valid[:, None] & k_ok[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
                if IEEE:
                    acc = tl.dot(a, b, acc, input_precision="ieee")
                else:
                    acc = tl.dot(a, b, acc)
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K
        w = tl.load(tw_ptr + pair, mask=valid, other=0.0).to(tl.float32)
        y = acc * w[:, None]
        mask = valid[:, None] & (offs_n < H)[None, :]
        tl.store(y_ptr + tl.where(valid, pair, 0).to(tl.int64)[:, None] * stride_ym + offs_n[None, :],
                 y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _moe_combine_kernel(y_ptr, out_ptr, top_k, H, stride_ym, stride_ot, BLOCK: tl.constexpr,
                        OUT_FNUZ: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < H
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(top_k):                       # slot order: deterministic
        acc += tl.load(y_ptr + (t * top_k + j) * stride_ym + offs, mask=mask, other=0.0).to(tl.float32)
    if OUT_FNUZ:  # out is a uint8 view of a float8_e4m3fnuz tensor
        tl.store(out_ptr + t * stride_ot + offs, _e4m3fnuz_bits(acc), mask=mask)
    else:
        tl.store(out_ptr + t * stride_ot + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def expected_padded_rows(tokens: int, top_k: int, experts: int, block: int) -> float:
    """Expected routed rows after each expert's rows are padded to a multiple of `block`, when every token picks
    top_k distinct experts uniformly (an expert's count ~ Binomial(tokens, top_k / experts)). The host cannot read
    the real counts without a sync; this is the batch geometry's expectation."""
    p = min(1.0, top_k / experts)
    if p >= 1.0:
        return experts * _cdiv(tokens, block) * block
    mean, sd = tokens * p, math.sqrt(tokens * p * (1 - p))
    lo, hi = max(0, int(mean - 10 * sd) - 1), min(tokens, int(mean + 10 * sd) + 2)
    mode = min(max(int(mean), lo), hi)
    odds = p / (1 - p)
    # the probabilities from the mode outwards by the ratio of neighbours (one exp, not one per term)
    pmf = math.exp(math.lgamma(tokens + 1) - math.lgamma(mode + 1) - math.lgamma(tokens - mode + 1)
                   + mode * math.log(p) + (tokens - mode) * math.log1p(-p))
    total, up = pmf * _cdiv(mode, block) * block, pmf
    for c in range(mode, hi):
        up *= (tokens - c) / (c + 1) * odds
        total += up * _cdiv(c + 1, block) * block
    for c in range(mode, lo, -1):
        pmf *= c / (tokens - c + 1) / odds
        total += pmf * _cdiv(c - 1, block) * block
    return experts * total


def decode_regime(cfg: dict, num_pairs: int, num_experts: int) -> bool:
    """Whether a batch runs the SMALL_* tiles: at most SMALL_MAX_PAIRS_PER_EXPERT pairs an expert on average."""
    limit = cfg.get("SMALL_MAX_PAIRS_PER_EXPERT", 0)
    return bool(limit) and num_pairs <= limit * num_experts


def regime_config(cfg: dict, num_pairs: int, num_experts: int, top_k: int = 1) -> dict:
    """The tiles for this batch: the SMALL_* ones when the mean (token, expert) pairs per expert is at most
    SMALL_MAX_PAIRS_PER_EXPERT. Measured on the H200 (sweep of 2026-11-30): at 2-4 pairs per expert (decode)
    the 32-row tiles with 4 warps were 1.07-1.08x faster than the default 64-row tiles; at 512 (prefill) the
    128-row tiles with 256-wide down tiles were 1.19x faster.
    Above that, HALF_M_GAIN (percent; 0: off) halves BLOCK_M (down to 16; HALF_M_WARPS warps, 0: unchanged) while
    the expected padded rows (expected_padded_rows) drop by more than that share each time: a mean of 167 pairs
    an expert pads to 256 rows in 128-row blocks but to 192 in 64-row ones. Off: at 25 its 64-row blocks were
    slower wherever it took them (H100, evaluator, 2026-12-05: 668 tokens of 8 experts 0.126 -> 0.156 ms, 2400
    of 128 experts 0.700 -> 0.794 ms); its 32-row blocks at 135 tokens of 8, 2% faster."""
    if not decode_regime(cfg, num_pairs, num_experts):
        gain, bm = cfg.get("HALF_M_GAIN", 0), cfg["BLOCK_M"]
        tokens = num_pairs // max(1, top_k)
        rows = expected_padded_rows(tokens, top_k, num_experts, bm) if gain else 0.0
        while gain and bm >= 32:
            half = expected_padded_rows(tokens, top_k, num_experts, bm // 2)
            if rows <= half * (1 + gain / 100):
                break
            bm, rows = bm // 2, half
        if bm == cfg["BLOCK_M"]:
            return cfg
        return {**cfg, "BLOCK_M": bm, "num_warps": cfg.get("HALF_M_WARPS") or cfg["num_warps"]}
    small = {"BLOCK_M": "SMALL_BLOCK_M", "BLOCK_N": "SMALL_BLOCK_N", "BLOCK_K": "SMALL_BLOCK_K",
             "DOWN_BLOCK_N": "SMALL_DOWN_BLOCK_N", "DOWN_BLOCK_K": "SMALL_DOWN_BLOCK_K", "num_warps": "SMALL_WARPS"}
    return {**cfg, **{base: cfg[key] for base, key in small.items() if key in cfg}}


_FNUZ = torch.float8_e4m3fnuz
_FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2)
_TL_DTYPES = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32,
              torch.float64: tl.float64}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _scale_block(size: int, groups: int, what: str) -> int:
    """The block size behind `groups` scales along an axis of `size`: the power of two (at least 16) whose
    ceil-division of size gives groups; ValueError when none does."""
    block = max(16, _next_pow2(_cdiv(size, max(groups, 1))))
    if groups < 1 or _cdiv(size, block) != groups:
        raise ValueError(f"{what}: {groups} scale groups do not tile {size} in power-of-two blocks")
    return block


_SMS: dict[int, int] = {}


def _multiprocessors(on_gpu: bool) -> int:
    """Multiprocessors of the current CUDA device (cached); 1 elsewhere, where no wave rule applies."""
    if not on_gpu:
        return 1
    index = torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


def narrowed_width(width: int, row_blocks: float, extent: int, sms: int, gain: float, floor: int) -> int:
    """NARROW_N_GAIN: the N tile of a GEMM over `row_blocks` M blocks and `extent` columns, halved (not below
    `floor`) while its wave-quantised cost (full waves of one program an SM, times the tile's width) drops by more
    than `gain` percent. A mid-sized MoE batch can leave an SM idle for half a wave: 63 down-GEMM programs of
    256 columns on 132 SMs use 48% of them, 126 of 128 columns 95%. At 20 (the default) on an H100, evaluator
    timer, 2026-12-05: 1.03-1.06x on the three published batches whose tiles it narrows (135, 277 and 1023 tokens,
    8 experts), no other tiles changed; at 10 it also narrowed 1979 tokens, 7% slower there."""
    def cost(w: int) -> float:
        return math.ceil(row_blocks * _cdiv(extent, w) / sms) * w

    while gain and width // 2 >= floor and cost(width) > cost(width // 2) * (1 + gain / 100):
        width //= 2
    return width


def route_chunk(num_pairs: int, most: int) -> int:
    """Pairs per routing program: the smallest power of two, at least ROUTE_SUB and at most `most`, that keeps the
    count and sort kernels at about ROUTE_PROGRAMS programs."""
    return min(most, max(ROUTE_SUB, _next_pow2(_cdiv(num_pairs, ROUTE_PROGRAMS))))


def _descriptors(cfg: dict, plain: bool, **operands) -> dict:
    """With TMA, on the plain (unscaled) path: a descriptor per operand (name=(tensor, rows, cols) of its tile;
    3-D weights [E, rows, K] get [1, rows, cols] boxes) and TMA on; nothing where one operand cannot have one
    (16-byte aligned base and strides)."""
    if not cfg.get("TMA") or not plain:
        return {}
    found = {}
    for name, (t, rows, cols) in operands.items():
        if t.stride(-1) != 1 or t.data_ptr() % 16 or any(s * t.element_size() % 16 for s in t.stride()[:-1]):
            return {}
        box = [1] * (t.dim() - 2) + [rows, cols]
        found[f"{name}_desc"] = TensorDescriptor(t, list(t.shape), list(t.stride()), box)
    return {**found, "TMA": True}


def _kernel_view(t: torch.Tensor) -> torch.Tensor:
    """fnuz tensors as uint8 (NVIDIA Triton cannot type fp8e4b8; the kernels decode the codes)."""
    return t.view(torch.uint8) if t.dtype == _FNUZ else t


def _dot_dtype(a_dtype: torch.dtype, w_dtype: torch.dtype):
    """Operand dtype of a scaled GEMM: e4m3fn x e4m3fn natively; other fp8 pairs in fp16 (exact); an fp8 side
    converted to the other side's dtype."""
    if a_dtype in _FP8 and w_dtype in _FP8:
        return tl.float8e4nv if a_dtype == w_dtype == torch.float8_e4m3fn else tl.float16
    return _TL_DTYPES[w_dtype if a_dtype in _FP8 else a_dtype]


# Launch plans by host-known sizes, dtypes, scale shapes and the tunables' values: the tile and schedule
# arithmetic runs once per batch geometry, not on every call (a decode step's host time exceeds its device
# time). Keyed by the values, so a search that edits TUNABLES in place gets fresh plans.
_PLANS: dict[tuple, dict] = {}


def _plan(T: int, H: int, E: int, two_i: int, k: int, x_dt: torch.dtype, w1_dt: torch.dtype, w2_dt: torch.dtype,
          a_groups: int | None, w1_groups: tuple | None, w2_groups: tuple | None, on_gpu: bool, cfg: dict) -> dict:
    """Tiles, schedule, operand forms and grids of one launch (see launch_moe_fused_experts)."""
    I = two_i // 2
    n = T * k
    cfg = regime_config(cfg, n, E, k)
    bm = cfg["BLOCK_M"]
    length = _max_padded_len(n, E, bm)
    n_blocks = length // bm
    chunk = route_chunk(n, cfg["ROUTE_CHUNK"])
    # Without scales and with one dtype throughout, the plain path (SCALED off: nothing below is compiled in).
    scaled1 = w1_groups is not None or a_groups is not None or w1_dt != x_dt
    act_dtype = torch.float32 if x_dt in _FP8 else x_dt  # fp8 activations: nothing rounds it
    scaled2 = w2_groups is not None or w2_dt != act_dtype
    dot1 = _dot_dtype(x_dt, w1_dt) if scaled1 else tl.float32
    dot2 = _dot_dtype(act_dtype, w2_dt) if scaled2 else tl.float32
    # fp32 act x (exact) bf16 weights: on a GPU two bf16 dots (hi + lo) instead of an fp32 one; the interpreter's
    # bf16 dots are not reliable, its fp32 ones exact.
    split = scaled2 and dot2 == tl.float32 and w2_dt in _FP8 and bool(cfg.get("ACT_SPLIT", 1)) and on_gpu
    dot2 = tl.bfloat16 if split else dot2
    ieee1 = dot1 in (tl.float32, tl.float64) if scaled1 else x_dt in (torch.float32, torch.float64)
    ieee2 = dot2 in (tl.float32, tl.float64) if scaled2 else act_dtype in (torch.float32, torch.float64)
    ga = _scale_block(H, a_groups, "a1_scale") if a_groups is not None else 128
    gn1 = _scale_block(two_i, w1_groups[0], "w1_scale rows") if w1_groups is not None else 128
    gk1 = _scale_block(H, w1_groups[1], "w1_scale columns") if w1_groups is not None else 128
    gn2 = _scale_block(H, w2_groups[0], "w2_scale rows") if w2_groups is not None else 128
    gk2 = _scale_block(I, w2_groups[1], "w2_scale columns") if w2_groups is not None else 128
    es = max(x_dt.itemsize, w1_dt.itemsize)
    bn, bn2 = cfg["BLOCK_N"], cfg["DOWN_BLOCK_N"]
    narrow = 0 if decode_regime(cfg, n, E) else cfg.get("NARROW_N_GAIN", 0)  # decode keeps its measured tiles
    sms = _multiprocessors(on_gpu) if narrow else 1
    # ceil(P / sms) / (P / sms) < 1 + sms / P: with P programs at least 100 * sms / narrow (counted without any
    # padding), no halving gains that share, so the expected padding need not be computed
    if narrow and sms > 1 and n / bm * min(_cdiv(I, bn), _cdiv(H, bn2)) < 100 * sms / narrow:
        row_blocks = expected_padded_rows(T, k, E, bm) / bm
        bn = narrowed_width(bn, row_blocks, I, sms, narrow, 32)
        bn2 = narrowed_width(bn2, row_blocks, H, sms, narrow, 64)
    bk = min(cfg["BLOCK_K"], ga, gk1) if scaled1 else cfg["BLOCK_K"]  # a K step inside one scale group
    scalar1 = w1_groups is not None and I % gn1 == 0  # tiles inside one block of rows: a scalar scale per step
    bn = min(bn, gn1) if scalar1 else bn
    stages1, bk = _fit_smem(cfg["num_stages"], bk, (bm + 2 * bn) * es)   # x tile + gate + up tiles
    bk2 = min(cfg["DOWN_BLOCK_K"], gk2) if scaled2 else cfg["DOWN_BLOCK_K"]
    scalar2 = w2_groups is not None and H % gn2 == 0
    bn2 = min(bn2, gn2) if scalar2 else bn2
    es2 = max(act_dtype.itemsize, w2_dt.itemsize)
    stages2, bk2 = _fit_smem(cfg["num_stages"], bk2, (bm + bn2) * es2)
    return dict(cfg=cfg, bm=bm, length=length, n_blocks=n_blocks, chunk=chunk, n_chunks=_cdiv(n, chunk),
                block_e=_next_pow2(E), act_dtype=act_dtype,
                y_dtype=torch.float32 if cfg["PAIR_FP32"] and act_dtype != torch.float64 else act_dtype,
                gemm1=dict(IEEE=ieee1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=cfg["GROUP_M"], SCALED=scaled1,
                           A_SCALE=a_groups is not None, W_SCALE=w1_groups is not None, A_FNUZ=x_dt == _FNUZ,
                           W_FNUZ=w1_dt == _FNUZ, DOT_DT=dot1, GA=ga, GN=gn1, GK=gk1, W_SCALAR=scalar1,
                           JOINT=bool(cfg.get("GATE_UP_JOINT", 0)), num_warps=cfg["num_warps"], num_stages=stages1),
                gemm2=dict(IEEE=ieee2, BLOCK_M=bm, BLOCK_N=bn2, BLOCK_K=bk2, GROUP_M=cfg["GROUP_M"],
                           SCALED=scaled2, W_SCALE=w2_groups is not None, W_FNUZ=w2_dt == _FNUZ, DOT_DT=dot2,
                           GN=gn2, GK=gk2, W_SCALAR=scalar2, SPLIT=split, num_warps=cfg["num_warps"],
                           num_stages=stages2),
                grid1=(n_blocks * _cdiv(I, bn),), grid2=(n_blocks * _cdiv(H, bn2),),
                tiles1=(bn, bk), tiles2=(bn2, bk2), cb=min(COMBINE_BLOCK, _next_pow2(H)))


def launch_moe_fused_experts(hidden, w1, w2, topk_weights, topk_ids, cfg: dict = TUNABLES, out_dtype=None,
                             w1_scale=None, w2_scale=None, a1_scale=None):
    hidden = hidden if hidden.stride(-1) == 1 else hidden.contiguous()
    w1 = w1.contiguous()
    w2 = w2.contiguous()
    T, H = hidden.shape
    E, two_i, _ = w1.shape
    I = two_i // 2
    k = topk_ids.shape[1]
    dev = hidden.device
    out = torch.empty((T, H), dtype=getattr(torch, out_dtype) if out_dtype else hidden.dtype, device=dev)
    if (w1_scale is None) != (w2_scale is None):
        raise ValueError("block-scaled weights need both w1_scale and w2_scale")
    if torch.float8_e5m2fnuz in (hidden.dtype, w1.dtype, w2.dtype, out.dtype):
        raise ValueError("float8_e5m2fnuz is not supported")
    n = T * k
    if n == 0:
        return out
    key = (T, H, E, two_i, k, hidden.dtype, w1.dtype, w2.dtype,
           a1_scale.shape[-1] if a1_scale is not None else None,
           tuple(w1_scale.shape[-2:]) if w1_scale is not None else None,
           tuple(w2_scale.shape[-2:]) if w2_scale is not None else None, hidden.is_cuda, *cfg.values())
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 256:  # batch sizes come and go: keep the cache bounded
            _PLANS.clear()
        plan = _PLANS[key] = _plan(*key[:12], cfg)
    flat_ids = topk_ids.reshape(-1).contiguous()
    flat_w = topk_weights.reshape(-1).contiguous()
    bm, length, n_blocks, n_chunks = plan["bm"], plan["length"], plan["n_blocks"], plan["n_chunks"]

    sorted_ids = torch.empty((length,), dtype=torch.int32, device=dev)
    expert_ids = torch.empty((n_blocks,), dtype=torch.int32, device=dev)
    counts = torch.empty((n_chunks, E), dtype=torch.int32, device=dev)
    block_end = torch.empty((E,), dtype=torch.int32, device=dev)
    _moe_route_count_kernel[(n_chunks,)](flat_ids, counts, sorted_ids, n, E, length, _cdiv(length, n_chunks),
                                         CHUNK=plan["chunk"], SUB=ROUTE_SUB, BLOCK_E=plan["block_e"], num_warps=4)
    _moe_route_scan_kernel[(1,)](counts, block_end, n_chunks, E, bm, SCAN_CHUNKS=SCAN_CHUNKS,
                                 BLOCK_E=plan["block_e"], num_warps=4)
    _moe_route_sort_kernel[(n_chunks,)](flat_ids, counts, block_end, sorted_ids, expert_ids, n, E, n_blocks,
                                        _cdiv(n_blocks, n_chunks), CHUNK=plan["chunk"], SUB=ROUTE_SUB,
                                        BLOCK_E=plan["block_e"], num_warps=4)

    a_s = a1_scale if a1_scale is not None else flat_w  # placeholders when absent (never read)
    w1_s = w1_scale if w1_scale is not None else flat_w
    w2_s = w2_scale if w2_scale is not None else flat_w
    a_strides = (a1_scale.stride(0), a1_scale.stride(1)) if a1_scale is not None else (0, 0)
    w1_strides = tuple(w1_scale.stride()) if w1_scale is not None else (0, 0, 0)
    w2_strides = tuple(w2_scale.stride()) if w2_scale is not None else (0, 0, 0)

    act = torch.empty((length, I), dtype=plan["act_dtype"], device=dev)
    gemm1, gemm2 = plan["gemm1"], plan["gemm2"]
    w1_st, w2_st = w1.stride(), w2.stride()
    _moe_fused_experts_kernel[plan["grid1"]](_kernel_view(hidden), _kernel_view(w1), sorted_ids, expert_ids, act, n,
                                             k, H, I, n_blocks, hidden.stride(0), w1_st[0], w1_st[1], I,
                                             a_s, w1_s, *a_strides, *w1_strides, **gemm1,
                                             **_descriptors(plan["cfg"], not gemm1["SCALED"],
                                                            w1=(w1, *plan["tiles1"])))
    y = torch.empty((n, H), dtype=plan["y_dtype"], device=dev)
    bn2, bk2 = plan["tiles2"]
    _moe_down_kernel[plan["grid2"]](act, _kernel_view(w2), sorted_ids, expert_ids, flat_w, y, n, H, I, n_blocks,
                                    I, w2_st[0], w2_st[1], H, w2_s, *w2_strides, **gemm2,
                                    **_descriptors(plan["cfg"], not gemm2["SCALED"], act=(act, bm, bk2),
                                                   w2=(w2, bn2, bk2)))
    cb = plan["cb"]
    _moe_combine_kernel[(T, _cdiv(H, cb))](y, _kernel_view(out), k, H, H, H, BLOCK=cb,
                                                 OUT_FNUZ=out.dtype == _FNUZ, num_warps=4)
    return out


class Model(nn.Module):
    def __init__(self, out_dtype: str | None = None):
        super().__init__()
        self.out_dtype = out_dtype  # the output's dtype name ("float32"), default the input's

    def forward(self, hidden, w1, w2, topk_weights, topk_ids, w1_scale=None, w2_scale=None, a1_scale=None):
        return launch_moe_fused_experts(hidden, w1, w2, topk_weights, topk_ids, out_dtype=self.out_dtype,
                                        w1_scale=w1_scale, w2_scale=w2_scale, a1_scale=a1_scale)
