"""Reference Triton kernel for attention_mla_decode (absorbed MLA decode over a paged or packed latent cache).

All heads attend over the same latent row c_t = [c_kv (R = kv_lora_rank) ; k_rope (P = rope_dim)], so a
program takes BLOCK_H heads of one sequence (grid (batch, cdiv(heads, BLOCK_H), splits)) and reads each
latent row once for all of them: Q is a [BLOCK_H, R] + [BLOCK_H, P] tile (heads padded to >= 16 rows for
tl.dot, padding rows masked). Per BLOCK_N-token chunk, gathered through the block table,

    s   = q_nope @ c_kv^T + q_rope @ k_rope^T        (c_kv tile loaded once, used transposed)
    acc = acc * alpha + p @ c_kv                      (online softmax in fp32, exp2)

so the [BLOCK_N, R] c_kv tile feeds both dots. The accumulator is [BLOCK_H, R] fp32 (R = 512).

Cache layouts (KV_MODE, constexpr, so the paged addresses are those of the paged-only kernel): 0 paged,
[blocks, block_size, (1,) R + P] through the block table; packed, [tokens, (1,) R + P] with the sequences one
after another, sequence b starting at row cu_seqlens_k[b] (1) or after the lengths of the sequences before it
(2, a sum each program takes over seq_lens, no host work). Lengths are seq_lens, or the offsets' differences.

Tactic SPLIT_KV (flash-decoding): the context is cut into PARTITION-token pieces on grid axis 2; each
writes (max, sum, acc) partials to an fp32 workspace and _attention_mla_decode_reduce_kernel merges the
ceil(seq_len / PARTITION) real pieces. SPLIT_KV = 0 is the split-free kernel that writes out directly. Fixed
partitions need the longest context from the host (the block table's width); a packed cache has no such bound,
so there the split-KV schedule is always BALANCED.

Tactic BALANCED (with SPLIT_KV): fixed partitions over a ramp of context lengths leave SMs idle (Nsight
Compute on the H200, dsv3_tp8_b64_ctx4096: SM active 69% of the elapsed cycles, "1 full wave and a partial
wave"). Instead the grid is PROGRAMS_PER_SM programs per SM, and the work (every BLOCK_N-token tile of every
head block of every sequence, counted on the device from the lengths: no host sync) is cut into equal
contiguous spans, one per program. A program walks its span and writes one partial per (sequence, head block)
group it touches, in slot group + program: along the units both numbers only grow and one of them grows at
each new piece, so the slots are distinct and fewer than groups + programs, whatever the lengths. The reduce
kernel recomputes which programs touched its group. Measured against fixed 512-token partitions (H200, grid
sweep, 2026-11-30): 1.08x on dsv3_tp8_b64_ctx4096, 1.15x at ctx 32768, 1.21x on dsv3_dpattn_b32_ctx8192,
0.99x at b256 ctx2048 and 0.96x at b128 with 128 heads; 1 or 3 programs per SM were slower than 2 on every
shape. (Those runs bounded a group's partials by a minimum span of 1/32 of the longest context's tiles; that
minimum was below the equal span on every suite shape, so the compact slots leave their schedule unchanged.)
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_H": 32, "BLOCK_N": 64, "SPLIT_KV": 1, "PARTITION": 512, "BLOCK_S": 8,
            "num_warps": 4, "num_stages": 2, "PAGE_TILE": 1, "BALANCED": 1, "PROGRAMS_PER_SM": 2}
SEARCH_SPACE = {
    "BLOCK_H": [16, 32],
    "BLOCK_N": [16, 32, 64],
    "SPLIT_KV": [0, 1],
    "PARTITION": [128, 256, 512, 1024, 2048],
    "BLOCK_S": [4, 8, 16, 32],
    "num_warps": [4, 8],
    "num_stages": [1, 2, 3, 4],
    "PAGE_TILE": [0, 1],
    "BALANCED": [0, 1],
    "PROGRAMS_PER_SM": [1, 2, 3, 4],
}
# Tunables with no effect (the offline search skips them): without SPLIT_KV there are no partitions and no
# reduce kernel.
# BALANCED is a split-KV schedule (it replaces the fixed partitions, so PARTITION does nothing under it);
# PROGRAMS_PER_SM only sizes the balanced grid.
INERT = {"PARTITION": {"SPLIT_KV": [0]}, "BLOCK_S": {"SPLIT_KV": [0]}, "BALANCED": {"SPLIT_KV": [0]},
         "PROGRAMS_PER_SM": {"BALANCED": [0]}}
DEFAULT_ROPE_DIM = 64  # qk_rope_head_dim of DeepSeek-V2/V3 and Kimi-K2: splits the latent when no size is given

LOG2E = 1.4426950408889634


def _cap_stages(requested: int, stage_bytes: int, fixed_bytes: int = 0, budget: int = 160 * 1024) -> int:
    """Software-pipelining depth capped so that the staged K/V tiles fit in shared memory (H100/H200: 228 KB
    per SM); keeps every point of the search space compilable."""
    return max(1, min(requested, (budget - fixed_bytes) // max(stage_bytes, 1)))


@triton.jit
def _attend(q_nope, q_rope, kv_ptr, bt_row, n_start, n_stop, rank, rope_dim, block_size, qk_scale,
            skv_blk, skv_s, skv_c, sbt_n, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr,
            BLOCK_R: tl.constexpr, PAGE_TILE: tl.constexpr, KNOCKOUT: tl.constexpr, PAGED: tl.constexpr = 1):
    """Online softmax of one sequence's tokens [n_start, n_stop): (running max, running sum, accumulator). Paged:
    kv_ptr is the cache and bt_row the sequence's block-table row; packed: kv_ptr is the sequence's first row."""
    m_i = tl.full((BLOCK_H,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_H,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_H, BLOCK_C), dtype=tl.float32)
    offs_c = tl.arange(0, BLOCK_C)
    offs_r = tl.arange(0, BLOCK_R)
    offs_n0 = tl.arange(0, BLOCK_N)
    c_ok = offs_c < rank
    r_ok = offs_r < rope_dim
    for n0 in range(n_start, n_stop, BLOCK_N):
        offs_n = n0 + offs_n0
        n_ok = offs_n < n_stop
        if not PAGED:
            row = kv_ptr + offs_n.to(tl.int64) * skv_s                      # consecutive rows of the sequence
        elif PAGE_TILE:
            # The tile lies inside one cache page (the launcher checked that BLOCK_N divides the page and the
            # tiles start at multiples of BLOCK_N): one block-table load, then BLOCK_N consecutive rows.
            page0 = n0 // block_size
            phys0 = tl.load(bt_row + page0 * sbt_n).to(tl.int64)
            row = kv_ptr + phys0 * skv_blk + (n0 - page0 * block_size + offs_n0).to(tl.int64) * skv_s
        else:
            page = offs_n // block_size
            slot = (offs_n - page * block_size).to(tl.int64)
            phys = tl.load(bt_row + page * sbt_n, mask=n_ok, other=0).to(tl.int64)
            row = kv_ptr + phys * skv_blk + slot * skv_s                   # [BLOCK_N] latent rows
        ckv = tl.load(row[:, None] + offs_c[None, :] * skv_c, mask=n_ok[:, None] & c_ok[None, :], other=0.0)
        kr_t = tl.load(row[None, :] + (rank + offs_r)[:, None] * skv_c, mask=n_ok[None, :] & r_ok[:, None],
                       other=0.0)
        if KNOCKOUT == 1:
            # Bound probe only (scripts/bound_probes.py; wrong output): the tile loads without the math.
            acc += tl.sum(ckv.to(tl.float32), axis=0)[None, :] + tl.sum(kr_t.to(tl.float32))
        else:
            s = tl.dot(q_nope, tl.trans(ckv), input_precision="ieee")
            s = tl.dot(q_rope, kr_t, acc=s, input_precision="ieee") * qk_scale
            s = tl.where(n_ok[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, axis=1)
            if KNOCKOUT == 2:
                # Bound probe only: the scores and softmax without the P @ V dot.
                acc = acc * alpha[:, None] + tl.sum(p, axis=1)[:, None]
            else:
                acc = acc * alpha[:, None] + tl.dot(p.to(ckv.dtype), ckv, input_precision="ieee")
            m_i = m_new
    return m_i, l_i, acc


@triton.jit
def _seq_len(sl_ptr, cu_ptr, b, LENS_FROM_CU: tl.constexpr):
    """Context length of sequence b: seq_lens[b], or the packed offsets' difference when no lengths are given."""
    if LENS_FROM_CU:
        n = tl.load(cu_ptr + b + 1) - tl.load(cu_ptr + b)
    else:
        n = tl.load(sl_ptr + b)
    return n


@triton.jit
def _seq_rows(kv_ptr, sl_ptr, cu_ptr, b, skv_s, KV_MODE: tl.constexpr, BLOCK_B: tl.constexpr):
    """Packed cache: a pointer to sequence b's first latent row (at cu_seqlens_k[b], or after the lengths of the
    sequences before it); paged: the cache itself."""
    if KV_MODE == 1:
        start = tl.load(cu_ptr + b).to(tl.int64)
    elif KV_MODE == 2:
        offs_b = tl.arange(0, BLOCK_B)
        start = tl.sum(tl.load(sl_ptr + offs_b, mask=offs_b < b, other=0).to(tl.int64), axis=0)
    else:
        start = 0
    return kv_ptr + start * skv_s


@triton.jit
def _load_q(q_ptr, b, heads, h_ok, rank, rope_dim, sq_b, sq_h, sq_c, BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr):
    offs_c = tl.arange(0, BLOCK_C)
    offs_r = tl.arange(0, BLOCK_R)
    q_rows = q_ptr + b * sq_b + heads[:, None] * sq_h
    q_nope = tl.load(q_rows + offs_c[None, :] * sq_c, mask=h_ok[:, None] & (offs_c < rank)[None, :], other=0.0)
    q_rope = tl.load(q_rows + (rank + offs_r)[None, :] * sq_c, mask=h_ok[:, None] & (offs_r < rope_dim)[None, :],
                     other=0.0)
    return q_nope, q_rope


@triton.jit
def _attention_mla_decode_kernel(
    q_ptr, kv_ptr, bt_ptr, sl_ptr, cu_ptr, out_ptr, ws_m_ptr, ws_l_ptr, ws_acc_ptr,
    num_heads, rank, rope_dim, block_size, qk_scale, partition, num_splits,
    sq_b, sq_h, sq_c, skv_blk, skv_s, skv_c, sbt_b, sbt_n, so_b, so_h, so_c,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr,
    SPLIT_KV: tl.constexpr, PAGE_TILE: tl.constexpr, KNOCKOUT: tl.constexpr = 0, KV_MODE: tl.constexpr = 0,
    LENS_FROM_CU: tl.constexpr = 0, BLOCK_B: tl.constexpr = 16,
):
    b = tl.program_id(0).to(tl.int64)
    pid_h = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = _seq_len(sl_ptr, cu_ptr, b, LENS_FROM_CU)
    if SPLIT_KV:
        n_start = split * partition
        n_stop = tl.minimum(n_start + partition, seq_len)
    else:
        n_start = 0
        n_stop = seq_len

    offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_c = tl.arange(0, BLOCK_C)
    h_ok = offs_h < num_heads
    heads = offs_h.to(tl.int64)
    q_nope, q_rope = _load_q(q_ptr, b, heads, h_ok, rank, rope_dim, sq_b, sq_h, sq_c, BLOCK_C, BLOCK_R)
    m_i, l_i, acc = _attend(q_nope, q_rope, _seq_rows(kv_ptr, sl_ptr, cu_ptr, b, skv_s, KV_MODE, BLOCK_B),
                            bt_ptr + b * sbt_b, n_start, n_stop, rank, rope_dim, block_size, qk_scale, skv_blk,
                            skv_s, skv_c, sbt_n, BLOCK_H, BLOCK_N, BLOCK_C, BLOCK_R, PAGE_TILE, KNOCKOUT,
                            KV_MODE == 0)

    if SPLIT_KV:
        if n_start < seq_len:
            wrow = (b * num_heads + heads) * num_splits + split             # [BLOCK_H]
            tl.store(ws_m_ptr + wrow, m_i, mask=h_ok)
            tl.store(ws_l_ptr + wrow, l_i, mask=h_ok)
            tl.store(ws_acc_ptr + wrow[:, None] * BLOCK_C + offs_c[None, :], acc, mask=h_ok[:, None])
    else:
        o = acc / tl.where(h_ok, l_i, 1.0)[:, None]
        tl.store(out_ptr + b * so_b + heads[:, None] * so_h + offs_c[None, :] * so_c,
                 o.to(out_ptr.dtype.element_ty), mask=h_ok[:, None] & (offs_c < rank)[None, :])


@triton.jit
def _balanced_units(sl_ptr, cu_ptr, batch, n_hblk, n_prog, BLOCK_N: tl.constexpr, BLOCK_B: tl.constexpr,
                    LENS_FROM_CU: tl.constexpr):
    """The BALANCED schedule: unit = one BLOCK_N-token tile of one head block of one sequence, numbered by
    sequence, then head block, then tile; program p owns units [p * span, (p + 1) * span)."""
    offs_b = tl.arange(0, BLOCK_B)
    b_ok = offs_b < batch
    if LENS_FROM_CU:
        lens = tl.load(cu_ptr + offs_b + 1, mask=b_ok, other=0) - tl.load(cu_ptr + offs_b, mask=b_ok, other=0)
    else:
        lens = tl.load(sl_ptr + offs_b, mask=b_ok, other=0)
    per_b = (lens + BLOCK_N - 1) // BLOCK_N * n_hblk
    ends = tl.cumsum(per_b, axis=0)
    total = tl.sum(per_b, axis=0)
    span = tl.maximum((total + n_prog - 1) // n_prog, 1)
    return offs_b, per_b, ends, total, span


@triton.jit
def _attention_mla_decode_balanced_kernel(
    q_ptr, kv_ptr, bt_ptr, sl_ptr, cu_ptr, ws_m_ptr, ws_l_ptr, ws_acc_ptr,
    batch, num_heads, n_hblk, rank, rope_dim, block_size, qk_scale,
    sq_b, sq_h, sq_c, skv_blk, skv_s, skv_c, sbt_b, sbt_n,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_B: tl.constexpr, PAGE_TILE: tl.constexpr, KNOCKOUT: tl.constexpr = 0, KV_MODE: tl.constexpr = 0,
    LENS_FROM_CU: tl.constexpr = 0,
):
    pid = tl.program_id(0)
    offs_b, per_b, ends, total, span = _balanced_units(sl_ptr, cu_ptr, batch, n_hblk, tl.num_programs(0),
                                                       BLOCK_N, BLOCK_B, LENS_FROM_CU)
    offs_c = tl.arange(0, BLOCK_C)
    offs_hb = tl.arange(0, BLOCK_H)
    u = pid * span
    u_end = tl.minimum(u + span, total)
    while u < u_end:
        # the (sequence, head block) group that unit u belongs to, and this program's tiles [t0, t1) of it
        b = tl.sum((ends <= u).to(tl.int32), axis=0)
        b_units = tl.sum(tl.where(offs_b == b, per_b, 0), axis=0)
        b_start = tl.sum(tl.where(offs_b == b, ends, 0), axis=0) - b_units
        seq_len = _seq_len(sl_ptr, cu_ptr, b, LENS_FROM_CU)
        tiles = (seq_len + BLOCK_N - 1) // BLOCK_N
        hb = (u - b_start) // tiles
        g_start = b_start + hb * tiles
        t0 = u - g_start
        t1 = tl.minimum(tiles, u_end - g_start)
        b64 = b.to(tl.int64)
        offs_h = hb * BLOCK_H + offs_hb
        h_ok = offs_h < num_heads
        heads = offs_h.to(tl.int64)
        q_nope, q_rope = _load_q(q_ptr, b64, heads, h_ok, rank, rope_dim, sq_b, sq_h, sq_c, BLOCK_C, BLOCK_R)
        m_i, l_i, acc = _attend(q_nope, q_rope, _seq_rows(kv_ptr, sl_ptr, cu_ptr, b64, skv_s, KV_MODE, BLOCK_B),
                                bt_ptr + b64 * sbt_b, t0 * BLOCK_N, tl.minimum(t1 * BLOCK_N, seq_len), rank,
                                rope_dim, block_size, qk_scale, skv_blk, skv_s, skv_c, sbt_n, BLOCK_H, BLOCK_N,
                                BLOCK_C, BLOCK_R, PAGE_TILE, KNOCKOUT, KV_MODE == 0)
        slot = b64 * n_hblk + hb + pid                                      # group + program: distinct
        wrow = slot * BLOCK_H + offs_hb                                     # [BLOCK_H]
        tl.store(ws_m_ptr + wrow, m_i, mask=h_ok)
        tl.store(ws_l_ptr + wrow, l_i, mask=h_ok)
        tl.store(ws_acc_ptr + wrow[:, None] * BLOCK_C + offs_c[None, :], acc, mask=h_ok[:, None])
        u = g_start + t1


@triton.jit
def _attention_mla_decode_reduce_kernel(
    ws_m_ptr, ws_l_ptr, ws_acc_ptr, sl_ptr, cu_ptr, out_ptr,
    num_heads, rank, partition, num_splits, so_b, so_h, so_c,
    batch, n_hblk, n_prog,
    BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr, BALANCED: tl.constexpr = 0, BLOCK_H: tl.constexpr = 16,
    BLOCK_N: tl.constexpr = 16, BLOCK_B: tl.constexpr = 16, LENS_FROM_CU: tl.constexpr = 0,
):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1).to(tl.int64)
    seq_len = _seq_len(sl_ptr, cu_ptr, b, LENS_FROM_CU)
    if BALANCED:
        # the programs that worked on this (sequence, head block), in order: as in the balanced kernel; the
        # partial of program p is in slot group + p, row h % BLOCK_H
        offs_b, per_b, ends, total, span = _balanced_units(sl_ptr, cu_ptr, batch, n_hblk, n_prog, BLOCK_N,
                                                           BLOCK_B, LENS_FROM_CU)
        tiles = (seq_len + BLOCK_N - 1) // BLOCK_N
        b_start = tl.sum(tl.where(offs_b == b, ends - per_b, 0), axis=0)
        g_start = b_start + (h // BLOCK_H) * tiles
        n_used = (g_start + tiles - 1) // span - g_start // span + 1
        base = (b * n_hblk + h // BLOCK_H + g_start // span) * BLOCK_H + h % BLOCK_H
        step = BLOCK_H
    else:
        n_used = (seq_len + partition - 1) // partition
        base = (b * num_heads + h) * num_splits
        step = 1
    offs_s0 = tl.arange(0, BLOCK_S)
    offs_c = tl.arange(0, BLOCK_C)
    m_run = float("-inf")
    l_run = 0.0
    acc = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for s0 in range(0, n_used, BLOCK_S):
        offs_s = s0 + offs_s0
        s_ok = offs_s < n_used
        rows = base + offs_s * step
        m_s = tl.load(ws_m_ptr + rows, mask=s_ok, other=float("-inf"))
        l_s = tl.load(ws_l_ptr + rows, mask=s_ok, other=0.0)
        a_s = tl.load(ws_acc_ptr + rows[:, None] * BLOCK_C + offs_c[None, :], mask=s_ok[:, None], other=0.0)
        m_new = tl.maximum(m_run, tl.max(m_s, axis=0))
        w = tl.where(s_ok, tl.exp2(m_s - m_new), 0.0)
        alpha = tl.exp2(m_run - m_new)
        l_run = l_run * alpha + tl.sum(l_s * w, axis=0)
        acc = acc * alpha + tl.sum(a_s * w[:, None], axis=0)
        m_run = m_new
    o = acc / l_run
    tl.store(out_ptr + b * so_b + h * so_h + offs_c * so_c, o.to(out_ptr.dtype.element_ty), mask=offs_c < rank)


_SMS: dict[int, int] = {}


def _programs(device: torch.device) -> int:
    """Resident programs of the BALANCED kernel: PROGRAMS_PER_SM per multiprocessor (2 on the CPU interpreter);
    the SM count is cached (the property query costs microseconds a call)."""
    if device.type != "cuda":
        return 2
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index] * TUNABLES["PROGRAMS_PER_SM"]


def latent_layout(kv_cache: torch.Tensor, paged: bool) -> tuple[int, tuple[int, int, int]]:
    """(block size, strides (block, token, channel)) of a latent cache: paged [blocks, block_size, (1,) width],
    packed [tokens, (1,) width] (block size 0, block stride 0); the optional axis is MLA's single latent head."""
    lead = 2 if paged else 1
    if kv_cache.dim() not in (lead + 1, lead + 2) or (kv_cache.dim() == lead + 2 and kv_cache.shape[-2] != 1):
        layout = "[blocks, block_size, (1,) width]" if paged else "[tokens, (1,) width]"
        raise ValueError(f"a {'paged' if paged else 'packed'} MLA latent cache is {layout}, not "
                         f"{list(kv_cache.shape)}")
    strides = kv_cache.stride()
    if paged:
        return kv_cache.shape[1], (strides[0], strides[1], strides[-1])
    return 0, (0, strides[0], strides[-1])


def mla_sizes(q, kv_cache, block_tables, num_heads=None, kv_lora_rank=None, rope_dim=None, block_size=None):
    """(heads, kv_lora_rank, rope_dim, block_size) read from the tensors: heads from q, the latent width
    R + P from q and the cache, P from rope_dim, else R from kv_lora_rank, else P = DEFAULT_ROPE_DIM; sizes
    given must agree (block_size only exists for a paged cache)."""
    width = q.shape[-1]
    if kv_cache.shape[-1] != width:
        raise ValueError(f"q's last axis ({width}) and the latent cache's ({kv_cache.shape[-1]}) disagree")
    if rope_dim is not None:
        rope = int(rope_dim)
    else:
        rope = width - int(kv_lora_rank) if kv_lora_rank is not None else DEFAULT_ROPE_DIM
    found = (q.shape[1], width - rope, rope)
    given = (num_heads, kv_lora_rank, rope_dim)
    if any(g is not None and g != a for g, a in zip(given, found)) or not 0 < rope < width:
        raise ValueError(f"init sizes (num_heads, kv_lora_rank, rope_dim) = {given} disagree with the tensors' "
                         f"{found} (q {list(q.shape)})")
    if block_tables is None:
        if block_size is not None:
            raise ValueError("block_size is given but the cache is packed (no block table); leave it out")
        return (*found, 0)
    page = latent_layout(kv_cache, True)[0]
    if block_size is not None and block_size != page:
        raise ValueError(f"block_size {block_size} disagrees with the paged cache's {page}")
    return (*found, page)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


# Launch plans by host-known sizes and the tunables' values: the tile arithmetic runs once per batch geometry,
# not on every call (a decode step spends more time on the host than on the GPU). Keyed by the values, so a
# search that edits TUNABLES in place gets fresh plans.
_PLANS: dict[tuple, dict] = {}


def _plan(batch: int, num_heads: int, kv_lora_rank: int, rope_dim: int, paged: bool, table_cols: int,
          block_size: int, element_size: int, n_prog: int) -> dict:
    """Tiles, schedule and workspace sizes of a launch (see launch_attention_mla_decode)."""
    block_c = max(16, _next_pow2(kv_lora_rank))
    block_r = max(16, _next_pow2(rope_dim))
    # No wider than the heads need: 32-row tiles for 16 heads ran 1.3x slower than 16-row ones on the H200
    # (sweep of 2026-11-30), while 128 heads ran 1.3x faster with 32 than with 16.
    block_h = min(TUNABLES["BLOCK_H"], max(16, _next_pow2(num_heads)))
    block_n = TUNABLES["BLOCK_N"]
    n_hblk = _cdiv(num_heads, block_h)
    split = bool(TUNABLES["SPLIT_KV"])
    balanced = split and (bool(TUNABLES.get("BALANCED", 0)) or not paged)
    partition = TUNABLES["PARTITION"]
    stages = _cap_stages(TUNABLES["num_stages"], block_n * (block_c + block_r) * element_size)
    num_splits = max(1, _cdiv(table_cols * block_size, partition)) if split and paged else 1
    page_tile = paged and bool(TUNABLES.get("PAGE_TILE", 0)) and block_size % block_n == 0
    if balanced:  # one partial per (group, program) piece, in slot group + program
        rows = (batch * n_hblk + n_prog) * block_h
        ws = ((rows,), (rows, block_c))
    elif split:
        ws = ((batch, num_heads, num_splits), (batch, num_heads, num_splits, block_c))
    else:
        ws = None
    return dict(block_c=block_c, block_b=max(16, _next_pow2(batch)), block_h=block_h, block_n=block_n,
                n_hblk=n_hblk, split=split, balanced=balanced, partition=partition,
                n_prog=n_prog if balanced else 1, num_splits=num_splits, page_tile=page_tile, ws=ws,
                tiles=dict(BLOCK_H=block_h, BLOCK_N=block_n, BLOCK_C=block_c, BLOCK_R=block_r,
                           num_warps=TUNABLES["num_warps"], num_stages=stages))


def launch_attention_mla_decode(q, kv_cache, block_tables, seq_lens, num_heads, kv_lora_rank, rope_dim,
                                block_size, softmax_scale, knockout: int = 0, cu_seqlens_k=None):
    """Paged cache when block_tables is given (seq_lens required), else packed: sequence b at rows
    cu_seqlens_k[b]: (or after the seq_lens of the sequences before it), seq_lens[b] rows of it (or up to
    cu_seqlens_k[b + 1]). knockout != 0 is for scripts/bound_probes.py only: 1 drops the math (tile loads only),
    2 drops P @ V; the output is then wrong."""
    batch = q.shape[0]
    out = q.new_empty((batch, num_heads, kv_lora_rank))
    if batch == 0:
        return out
    paged = block_tables is not None
    if seq_lens is None and (paged or cu_seqlens_k is None):
        raise ValueError("seq_lens is required (a packed cache may give cu_seqlens_k instead)")
    kv_mode = 0 if paged else (1 if cu_seqlens_k is not None else 2)
    lens_from_cu = seq_lens is None
    sl = seq_lens if seq_lens is not None else cu_seqlens_k
    cu = cu_seqlens_k if cu_seqlens_k is not None else sl
    bt = block_tables if paged else sl  # unused when packed
    block_size, kv_strides = latent_layout(kv_cache, paged)
    bt_strides = block_tables.stride() if paged else (0, 0)
    key = (batch, num_heads, kv_lora_rank, rope_dim, paged, block_tables.shape[1] if paged else 0, block_size,
           q.element_size(), _programs(q.device), *TUNABLES.values())
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 256:  # batch sizes come and go: keep the cache bounded
            _PLANS.clear()
        plan = _PLANS[key] = _plan(*key[:9])
    split, balanced, n_hblk, n_prog = plan["split"], plan["balanced"], plan["n_hblk"], plan["n_prog"]
    common = dict(plan["tiles"], KNOCKOUT=knockout, KV_MODE=kv_mode, LENS_FROM_CU=lens_from_cu)
    if plan["ws"] is not None:
        ws_m = torch.empty(plan["ws"][0], dtype=torch.float32, device=q.device)
        ws_l = torch.empty_like(ws_m)
        ws_acc = torch.empty(plan["ws"][1], dtype=torch.float32, device=q.device)
    else:
        ws_m = ws_l = ws_acc = out  # unused
    if balanced:
        _attention_mla_decode_balanced_kernel[(n_prog,)](
            q, kv_cache, bt, sl, cu, ws_m, ws_l, ws_acc,
            batch, num_heads, n_hblk, kv_lora_rank, rope_dim, block_size, softmax_scale * LOG2E,
            *q.stride(), *kv_strides, *bt_strides, BLOCK_B=plan["block_b"], PAGE_TILE=plan["page_tile"], **common)
    else:
        partition = plan["partition"]
        _attention_mla_decode_kernel[(batch, n_hblk, plan["num_splits"])](
            q, kv_cache, bt, sl, cu, out, ws_m, ws_l, ws_acc,
            num_heads, kv_lora_rank, rope_dim, block_size, softmax_scale * LOG2E, partition, plan["num_splits"],
            *q.stride(), *kv_strides, *bt_strides, *out.stride(), SPLIT_KV=split,
            PAGE_TILE=plan["page_tile"] and (not split or partition % plan["block_n"] == 0),
            BLOCK_B=plan["block_b"], **common)
    if split:
        _attention_mla_decode_reduce_kernel[(batch, num_heads)](
            ws_m, ws_l, ws_acc, sl, cu, out, num_heads, kv_lora_rank, plan["partition"], plan["num_splits"],
            *out.stride(), batch, n_hblk, n_prog, BLOCK_S=TUNABLES["BLOCK_S"], BLOCK_C=plan["block_c"],
            BALANCED=balanced, BLOCK_H=plan["block_h"], BLOCK_N=plan["block_n"], BLOCK_B=plan["block_b"],
            LENS_FROM_CU=lens_from_cu, num_warps=4,
        )
    return out


class Model(nn.Module):
    """Sizes are read from the tensors (mla_sizes); init sizes, when given, must agree with them. The softmax
    scale defaults to (kv_lora_rank + rope_dim) ** -0.5, the scaled-dot-product convention over the latent."""

    def __init__(self, num_heads: int | None = None, kv_lora_rank: int | None = None, rope_dim: int | None = None,
                 block_size: int | None = None, softmax_scale: float | None = None):
        super().__init__()
        self.num_heads, self.kv_lora_rank, self.rope_dim, self.block_size = num_heads, kv_lora_rank, rope_dim, \
            block_size
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else None
        self._sizes: dict[tuple, tuple] = {}  # mla_sizes by the tensors' shapes (it reads nothing else)

    def forward(self, q, kv_cache, block_tables=None, seq_lens=None, cu_seqlens_k=None):
        key = (q.shape, kv_cache.shape, block_tables is None)
        sizes = self._sizes.get(key)
        if sizes is None:
            if len(self._sizes) > 256:  # batch sizes come and go: keep the cache bounded
                self._sizes.clear()
            sizes = self._sizes[key] = mla_sizes(q, kv_cache, block_tables, self.num_heads, self.kv_lora_rank,
                                                 self.rope_dim, self.block_size)
        heads, rank, rope, block_size = sizes
        scale = self.softmax_scale if self.softmax_scale is not None else (rank + rope) ** -0.5
        return launch_attention_mla_decode(q, kv_cache, block_tables, seq_lens, heads, rank, rope, block_size,
                                           scale, cu_seqlens_k=cu_seqlens_k)
