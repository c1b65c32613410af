"""Reference Triton kernel for attention_prefill_varlen: GQA flash attention over packed variable-length
sequences, causal (bottom-right aligned) or not, keys and values contiguous or in a paged cache.

Grid (tiles, num_heads): axis 0 enumerates the query tiles of all sequences (sequence b contributes
cdiv(q_len_b, BLOCK_M) tiles). A first small kernel writes the running count of tiles per sequence; each
program finds its sequence by a binary search over it (log2(batch) dependent loads), or with TILE_MAP in one
load from a tile -> sequence map a second small kernel writes (one launch more; for batches of short
sequences, where the search is a large part of a program's time); nothing is read on the host; axis 0 is sized
by the bound cdiv(total_q, BLOCK_M) + batch and surplus programs store nothing. The
tiles of a sequence run last-first, so the long causal rows start first.

With PACK_GQA the grid's second axis runs over KV heads and a tile's rows are (token, head) pairs of the KV
head's group (BLOCK_M // group tokens): each K/V chunk is loaded once for every head that reads it.

Per tile: Q [BLOCK_M, D] stays in registers; K/V of the sequence's KV head (head // group) stream in
BLOCK_N chunks through an online softmax in fp32 (exp2 with the scale folded into log2(e)). Chunks every row
of the tile sees in full need no mask; only the chunks past that (the causal diagonal, the sequence's end)
are masked. With a block table, the rows of a chunk are gathered slot by slot from their blocks. P is cast
to V's dtype for the second dot (bf16/fp16 tensor cores); fp32 inputs use IEEE dots so they meet the fp32
tolerance.

With AUTO (the default) the launcher picks the tile configuration from the workload, after a sweep on an H200
(bf16, 16-slot pages; kb/experience/exp-h200-varlen-attention-tiles-by-sequence-length.md): batches of short
sequences (at most SHORT_TOKENS query tokens per sequence on average, enough of them to give every SM four
programs) run small tiles — many short programs,
no software pipelining, one-load tile map, GQA heads packed, V loaded beside K — and long sequences run
128-row tiles with 8 warps (64-row ones where 128-row tiles would not give every SM a program).

KV_AHEAD 1 issues a chunk's V load beside its K load, before the first dot, so the two latencies overlap in a
program without pipelining stages; 2 also loads the next chunk's K and V before this chunk's dots (registers).
MAXNREG caps the registers per thread (more programs per SM, at the price of spills), for heads up to 128.
BT_AHEAD (paged caches; not with KV_AHEAD 2) reads each chunk's cache-block ids one chunk ahead, so a chunk's K/V
gather no longer waits on a block-table load first: one dependent global round trip a chunk instead of two. It is
off: on the H200 (2026-12-04, do_bench, AUTO's tiles, 16-slot pages) it was 3-6% slower on every shape tried,
256-token batches of 130-1192 sequences (0.171 -> 0.181, 1.737 -> 1.837, 3.898 -> 4.149 ms) and single sequences
of 1144-11840 tokens (3-4%): the extra carried registers and spills cost more than the round trip saved.
TMA loads the unmasked K/V chunks of contiguous K/V through host-built descriptors (the copy engine, no address
arithmetic); AUTO keeps it for the long-sequence tiles only (H200, in the suite: 4 x 4096 tokens 0.714 -> 0.655 ms,
8192 and 16384 tokens 9% and 11% faster; the short tiles, unpipelined, lost 12-13%). WARP_SPECIALIZE asks the
compiler to split that loop into producer and consumer warps (no effect on Triton 3.6, H200).
A paged cache [blocks, page, kv_heads, head] takes the same descriptors over its [blocks * page, kv_heads * head]
view when a chunk fits in a block (page a multiple of BLOCK_N; a chunk's row is its block id times the page plus
its offset there). H200, do_bench, 2026-12-05: AUTO's long tiles on one 6294-token sequence (32 / 4 heads, head
128) in 128-slot pages 1.116 -> 0.849 ms (1.31x), so they take it wherever the pages hold whole chunks; 16-slot
pages need 16-key chunks, which lost to AUTO's 32-key gathers on 256-token batches with or without TMA and 1-3
stages (1882 x 256, 16 / 4 heads: 3.12 ms against 3.71 at best, 3.98 through TMA), so the short tiles keep the
gathers. TMA_TAIL also reads the masked chunks (the causal diagonal, the sequence's end) as whole boxes: keys
past the end are masked out of P and their V rows zeroed (a stale slot of a paged cache may hold NaN); 1-2%
faster on the long paged tiles (0.849 -> 0.835 ms, 16 x 1024 tokens in 64-slot pages 0.629 -> 0.622 at 64-key
chunks), not measured on contiguous K/V, off by default.
SPLIT_HEAD runs a head that is not a power of two as two parts, each its own dots (head 72 as 64 + 16 lanes of
MMA width instead of 128 padded: 37.5% less tensor-core work; 192 as 128 + 64), with no TMA or KV_AHEAD 2 form.
On by default: H200, causal, single long sequences under AUTO, do_bench median: head 72 paged 11840 tokens 1.96 ->
1.76 ms, head 80 paged 24752 tokens 7.46 -> 6.57 ms, head 72 contiguous 17296 tokens 3.26 -> 3.12 ms, head 192
paged 1688 tokens 0.169 -> 0.139 ms (1.05-1.21x; identical outputs). Heads that are powers of two are unchanged.
GLUON: a paged cache the Triton kernel would gather slot by slot (no TMA box holds a chunk: pages smaller than
the chunk) runs on an sm_90 GPU as a second kernel below, written in Gluon, which copies each page of a chunk by
TMA into a shared-memory ring (16-bit values, power-of-two heads of 16-256). H200, do_bench, 16-slot pages,
2026-12-05, the kernel as first written (scalar block-id loads, bf16 only) at 32-key chunks, 2 stages, 4 warps:
256-token batches 1882 x 256 (16 / 4 heads) 3.166 -> 2.661 ms, 130 x 256 (10 / 1) 0.171 -> 0.144, 1192 x 256
(28 / 4) 3.896 -> 3.089; one 6294-token sequence (32 / 4) 1.130 -> 0.944. On by default since this form (block
ids as one vector load, fp16, key lengths from cu_seqlens_k, BT_AHEAD) ran on an H200 (2026-12-05, the evaluator's
saturated timer, 25 published workloads in 16-slot pages): device time down on every one it takes, 0.171 -> 0.141
ms (130 x 256, 10 / 1), 3.151 -> 2.720 (1882 x 256, 16 / 4), 6.712 -> 5.452 (2056 x 256, 28 / 4), 0.527 -> 0.388
(one 5926-token sequence, head 256), 0.0146 -> 0.0128 (16 tokens). Its launch costs more host time (two TMA
descriptors, a heavier launcher): end to end 0.109 -> 0.197 ms on the 16-token call, 0.120 -> 0.208 on one of 1144
tokens, where the host's issue time is the call's time. Since then its two layouts are cached and the tile prefix
and map are one launch: host time per call 140.7 -> 109.8 us (16 tokens) and 143.7 -> 104.7 (1144 tokens), H200,
scripts/host_cost.py (the Triton kernel's: 72).
GLUON_MAXNREG caps the Gluon kernel's registers (heads up to 128): 143 -> 128 a thread, no spills, 4 programs of
4 warps an SM instead of 3. On by default: H200, the evaluator's saturated timer, 2026-12-05, the 25 published
paged workloads: 1.08-1.16x on the batches of 256-token sequences (130 x 256, 10 / 1: 0.141 -> 0.126 ms; 1882 x
256, 16 / 4: 2.746 -> 2.373; 2056 x 256, 28 / 4: 5.458 -> 5.034), level elsewhere. GLUON_PERSIST (off) runs the
Gluon kernel as a persistent grid of that many programs an SM, one chunk stream over each program's work items;
H100, do_bench: 1.05-1.21x on six batched workloads, 0.62-0.69x on two whose items are few and uneven (static
assignment: one 2018-token sequence, 32 / 8 heads), no better than the register cap, and with it spills.
GLUON_SPLIT (on) sends a head that is not a power of two to the Gluon kernel as SPLIT_HEAD's two
parts (72 and 80 as 64 + 16, 96 as 64 + 32, 192 as 128 + 64): second K and V rings and a second Q tile of the
narrow part, whose TMA boxes start at the head's column 64 (128) and run past the head into the next one's
columns, or past the row's end as zeros; Q's columns there are zero, so they add nothing to Q K^T, and the matching
output columns are computed and never stored; the power-of-two forms' code is unchanged. GLUON_SPLIT_BLOCK_N keys a
chunk of a split of at most 128 MMA columns (72 and 80 at 4 warps and the register cap: 128 registers, no spills).
H100, do_bench, 2026-12-06, single sequences in 16-slot pages against the Triton kernel's split: 64-key chunks
1.09x (11840 tokens, head 72), 1.07x (24752, 80), 1.13x (49152, 72), where 32-key chunks were 0.95-1.05x; head 192
(1688 tokens) 1.39x at 32-key chunks. On since the evaluator timed the 64-key rule with GLUON_FULL (H100, 2026-12-06,
the 25 published paged workloads): 1.25x (11840 tokens, head 72), 1.29x (24752, 80), 1.30x (49152, 72), 1.39x
(1688, 192).
GLUON_FULL and GLUON_LAZY cut the Gluon kernel's non-MMA instructions a chunk, which its SASS suggests bound it
(Triton 3.6, ptxas sm_90a, AUTO's Gluon tiles: 64 rows, 32-key chunks, head 128, 128 registers): ~400 instructions
a warp a chunk (~140 of them the copies' issue, ~255 the softmax and P V's issue) against 256 tensor-core cycles a
chunk; with 4 programs an SM each SM sub-partition issues ~1600 instructions for ~1000 cycles of MMA. FULL: the
chunks every row of the tile sees whole (below the sequence's end and the tile's first row's last key) skip the
two key masks and their selects, and the scale folds into the exponent's FMA. LAZY: the running max moves only
when some row's grows by more than 2**8 (checked over the tile), so the accumulator's rescale (HEAD / BLOCK_N
multiplies an element of P: 64 a thread a chunk at head 128) runs only then; P stays below 256 and the sum and
accumulator share the stale max, so the result is the same. Together the softmax and P V's issue take ~150
instructions a warp on an unmasked chunk, ~290 in all. H100, 2026-12-06: FULL is on — do_bench, AUTO's Gluon tiles,
16-slot pages: 1882 x 256 tokens (16 / 4 heads) 2.444 -> 2.344 ms, one 6294-token sequence (32 / 4) 0.907 ->
0.813, one 11840-token sequence split (head 72) 1.761 -> 1.579; the evaluator over the 25 published workloads,
with GLUON_SPLIT: S_op 0.341 -> 0.359 (H100 roofline), 1.00-1.05x on the 256-token batches, 1.12x and 1.08x on the
6294- and 2018-token sequences; slower only on two calls of ~10 us (16 and 145 tokens: 3-4%). LAZY is off: slower wherever
timed (2.444 -> 2.549, 0.907 -> 0.928, 1.761 -> 1.891 ms alone; beside FULL 1.5-4% slower than FULL alone): the
tile-wide growth test (a reduction across the warps, two barriers a chunk) costs more than the multiplies it
saves, so the instruction count alone does not bound this loop.
LAZY is the same lazy rescale in the Triton kernel's unmasked chunks (TMA, KV_AHEAD 1 and 2, and V loaded after
the softmax; the masked chunks rescale as before, from whatever max they find). Off: H100, the evaluator, our
suite's contiguous varlen workloads (TMA, 128-row tiles): slower on all five, S_op 0.374 -> 0.339 (2.181 ->
2.557 ms on one 16384-token sequence).
GLUON_WS warp-specialises the Gluon kernel: one warp reads the block ids and issues every chunk's copies, waiting
on a second barrier a slot for the attending warps to hand the slot back after its P V, so the attending warps'
loop has no copy issue and none of the CTA barriers Triton places before each copy (ptxas, Triton 3.6: the copy
warp's stream has none; the attending warps keep ~3 barriers of their own 4 warps a chunk). Its cost is
occupancy: Triton pads the copy warp to a warpgroup and raises the attending warps' registers (setmaxnreg), so a
4-warp program launches 256 threads, and the register cap must be 94 or more (ptxas refuses 80): 2 programs an
SM at GLUON_MAXNREG 128 instead of 4. Whole or split heads, no OVERLAP or LAZY. Off in the explicit tunables; AUTO
takes it with 64-key chunks where a tile's keys are a long stream or the grid leaves SMs to spare
(`_gluon_workload_tiles`; H100, CUDA-graph replays: 1.09-1.58x on single sequences of 145-49152 tokens, split
heads included, 0.76-0.80x on batches of 256-token sequences, which keep the 4-programs-an-SM form; through the
evaluator on a paged published workload of 25 shapes, S_op 0.359 -> 0.380 on the H100's roofline, 1.05-1.47x on
its nine longest single sequences).
A batch of one sequence launches the Gluon kernel alone: it counts its own query tiles from cu_seqlens instead of
reading the prefix kernel's (H100, CUDA-graph replays: 1.39-1.47x on 7- and 16-token sequences, 1.2x at 72-145,
2-5% at 875-2018).
GLUON_PART_CHUNKS (off; 0 or chunks a part) splits a tile's keys into parts, one program each (grid axis 2), for
grids of few programs whose time is the longest tile's chain of chunks: a tile of more than one part writes each
part's unnormalised fp32 accumulator and row (max, sum) to part buffers [parts, tokens, heads, head], and
`_parts_combine_kernel` merges them, out = sum_p 2^(m_p - M) acc_p / sum_p 2^(m_p - M) l_p; a tile of one part
writes its output as before. The number of parts is bounded from the block table's width (no device read).
Measured slower everywhere it was timed (H100: 1.4-2.8x slower on single sequences of 875-2018 tokens at 4-16
chunks a part): the part buffers' round trip and the second kernel cost more than the shorter chains save.
AUTO 0 launches the explicit tunables (the search space the tuner walks).
"""

import functools

import torch
import triton
import triton.language as tl
from torch import nn
from triton.tools.tensor_descriptor import TensorDescriptor

TUNABLES = {"AUTO": 1, "BLOCK_M": 64, "BLOCK_N": 64, "TILE_MAP": 0, "PACK_GQA": 0, "KV_AHEAD": 0, "MAXNREG": 0,
            "num_warps": 4, "num_stages": 2, "TMA": 1, "WARP_SPECIALIZE": 0, "SPLIT_HEAD": 1, "BT_AHEAD": 0,
            "TMA_TAIL": 0, "GLUON": 1, "GLUON_BLOCK_N": 32, "GLUON_STAGES": 2, "GLUON_WARPS": 4,
            "GLUON_OVERLAP": 0, "GLUON_BT_AHEAD": 0, "GLUON_PERSIST": 0, "GLUON_MAXNREG": 128, "GLUON_SPLIT": 1,
            "GLUON_SPLIT_BLOCK_N": 64, "GLUON_FULL": 1, "GLUON_LAZY": 0, "LAZY": 0, "GLUON_WS": 0,
            "GLUON_PART_CHUNKS": 0}
SEARCH_SPACE = {
    "AUTO": [0, 1],
    "TILE_MAP": [0, 1],
    "PACK_GQA": [0, 1],
    "KV_AHEAD": [0, 1, 2],
    "MAXNREG": [0, 128],
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [16, 32, 64, 128],
    "num_warps": [4, 8],
    "num_stages": [1, 2, 3, 4],
    "TMA": [0, 1],
    "WARP_SPECIALIZE": [0, 1],
    "SPLIT_HEAD": [0, 1],
    "BT_AHEAD": [0, 1],
    "TMA_TAIL": [0, 1],
    "GLUON": [0, 1],
    "GLUON_BLOCK_N": [16, 32, 64],
    "GLUON_STAGES": [2, 3, 4],
    "GLUON_WARPS": [4, 8],
    "GLUON_OVERLAP": [0, 1],
    "GLUON_BT_AHEAD": [0, 1],
    "GLUON_PERSIST": [0, 2, 3, 4],
    "GLUON_MAXNREG": [0, 128],
    "GLUON_SPLIT": [0, 1],
    "GLUON_SPLIT_BLOCK_N": [32, 64],
    "GLUON_FULL": [0, 1],
    "GLUON_LAZY": [0, 1],
    "LAZY": [0, 1],
    "GLUON_WS": [0, 1],
    "GLUON_PART_CHUNKS": [0, 4, 8, 16],
}

INERT = {  # AUTO picks these itself
    "BLOCK_M": {"AUTO": [1]}, "BLOCK_N": {"AUTO": [1]}, "TILE_MAP": {"AUTO": [1]}, "PACK_GQA": {"AUTO": [1]},
    "KV_AHEAD": {"AUTO": [1]}, "MAXNREG": {"AUTO": [1]}, "num_warps": {"AUTO": [1]},
    "num_stages": {"AUTO": [1]}, "WARP_SPECIALIZE": {"TMA": [0]}, "TMA_TAIL": {"TMA": [0]},
    "GLUON_BLOCK_N": {"GLUON": [0]}, "GLUON_WARPS": {"GLUON": [0]}, "GLUON_PERSIST": {"GLUON": [0]},
    "GLUON_MAXNREG": {"GLUON": [0]}, "GLUON_SPLIT": {"GLUON": [0], "SPLIT_HEAD": [0]},
    "GLUON_SPLIT_BLOCK_N": {"GLUON": [0], "SPLIT_HEAD": [0], "GLUON_SPLIT": [0]},
    # the persistent form has its own 2-slot stream (no OVERLAP, no block ids read ahead, every chunk masked and
    # rescaled)
    "GLUON_STAGES": {"GLUON": [0], "GLUON_PERSIST": [2, 3, 4]},
    "GLUON_OVERLAP": {"GLUON": [0], "GLUON_PERSIST": [2, 3, 4]},
    "GLUON_BT_AHEAD": {"GLUON": [0], "GLUON_PERSIST": [2, 3, 4]},
    "GLUON_FULL": {"GLUON": [0], "GLUON_PERSIST": [2, 3, 4]},
    "GLUON_LAZY": {"GLUON": [0], "GLUON_PERSIST": [2, 3, 4]},
    "GLUON_WS": {"GLUON": [0]},
    "GLUON_PART_CHUNKS": {"GLUON": [0]},
}

LOG2E = 1.4426950408889634
SHORT_TOKENS = 1024  # mean query tokens per sequence up to which AUTO picks the short-sequence tiles
STREAM_TOKENS = 512  # mean query tokens per sequence from which AUTO's Gluon path takes the copy warp (GLUON_WS)
LAZY_GROWTH = tl.constexpr(8.0)  # log2 units a running max may grow before LAZY / GLUON_LAZY rescale (P < 256)


def _cap_stages(requested: int, stage_bytes: int, fixed_bytes: int = 0, budget: int = 160 * 1024) -> int:
    """Software-pipelining depth capped so that the staged K/V tiles fit in shared memory (H100/H200: 228 KB
    per SM); keeps every point of the search space compilable."""
    return max(1, min(requested, (budget - fixed_bytes) // max(stage_bytes, 1)))


@triton.jit
def _tile_prefix_kernel(cu_ptr, prefix_ptr, batch, tile_tokens, CHUNK: tl.constexpr):
    """prefix[b] = query tiles of `tile_tokens` tokens of the sequences before b (prefix[batch] = all of them);
    one program."""
    carry = 0
    tl.store(prefix_ptr, 0)
    for c0 in range(0, batch, CHUNK):
        offs = c0 + tl.arange(0, CHUNK)
        ok = offs < batch
        s0 = tl.load(cu_ptr + offs, mask=ok, other=0)
        s1 = tl.load(cu_ptr + offs + 1, mask=ok, other=0)
        tiles = tl.where(ok, (s1 - s0 + tile_tokens - 1) // tile_tokens, 0)
        running = tl.cumsum(tiles, axis=0) + carry
        tl.store(prefix_ptr + offs + 1, running, mask=ok)
        carry += tl.sum(tiles, axis=0)


@triton.jit
def _tile_prefix_map_kernel(cu_ptr, prefix_ptr, map_ptr, tile_tokens, CHUNK: tl.constexpr,
                            MAP_CHUNK: tl.constexpr):
    """The prefix above and map[t] = the sequence of query tile t, in one launch (a launch is host time on every
    call): one program per sequence b sums the tiles of the sequences before it from cu_seqlens (each program
    re-reads that part of it, a few KB from L2), writes prefix[b + 1] and its own tiles' entries of the map."""
    b = tl.program_id(0)
    first = 0
    for c0 in range(0, b, CHUNK):
        offs = c0 + tl.arange(0, CHUNK)
        ok = offs < b
        s0 = tl.load(cu_ptr + offs, mask=ok, other=0)
        s1 = tl.load(cu_ptr + offs + 1, mask=ok, other=0)
        first += tl.sum(tl.where(ok, (s1 - s0 + tile_tokens - 1) // tile_tokens, 0), axis=0)
    n = (tl.load(cu_ptr + b + 1) - tl.load(cu_ptr + b) + tile_tokens - 1) // tile_tokens
    if b == 0:
        tl.store(prefix_ptr, 0)
    tl.store(prefix_ptr + b + 1, first + n)
    for t0 in range(0, n, MAP_CHUNK):
        offs = t0 + tl.arange(0, MAP_CHUNK)
        tl.store(map_ptr + first + offs, tl.full((MAP_CHUNK,), 0, tl.int32) + b, mask=offs < n)


@triton.jit
def _kv_rows(bt_ptr, b, s_bt, page, k_start, offs_n, n_ok, sk_b, sk_t, sv_b, sv_t, PAGED: tl.constexpr):
    """Element offsets of keys `offs_n` of sequence b in K and V: slots of the block table's blocks (paged), or
    rows after the sequence's first key."""
    if PAGED:
        return _rows_in_pages(_page_ids(bt_ptr, b, s_bt, page, offs_n, n_ok), offs_n, page, sk_b, sk_t, sv_b, sv_t)
    rows = k_start.to(tl.int64) + offs_n
    return rows * sk_t, rows * sv_t


@triton.jit
def _page_ids(bt_ptr, b, s_bt, page, offs_n, n_ok):
    """The cache blocks that hold keys `offs_n` of sequence b (0 where masked)."""
    return tl.load(bt_ptr + b * s_bt + offs_n // page, mask=n_ok, other=0)


@triton.jit
def _rows_in_pages(block, offs_n, page, sk_b, sk_t, sv_b, sv_t):
    """Element offsets of keys `offs_n` in K and V, their blocks already read (`block`)."""
    block = block.to(tl.int64)
    return block * sk_b + (offs_n % page) * sk_t, block * sv_b + (offs_n % page) * sv_t


@triton.jit
def _scores(q, kt, q2, kt2, SPLIT: tl.constexpr):
    """Q K^T of a chunk; with SPLIT the head's second part (q2 [M, D2], kt2 [D2, N]) adds its own dot."""
    s = tl.dot(q, kt, input_precision="ieee")
    if SPLIT:
        s += tl.dot(q2, kt2, input_precision="ieee")
    return s


@triton.jit
def _load_part(ptrs, mask, fallback, SPLIT: tl.constexpr):
    """A tile of the head's second part (SPLIT), else `fallback` (nothing loaded; the split code is not emitted)."""
    if SPLIT:  # one assignment per constexpr branch: a compiled function's returns must share one type
        part = tl.load(ptrs, mask=mask, other=0.0)
    else:
        part = fallback
    return part


@triton.jit
def _pv(acc, acc2, alpha, p, vv, vv2, SPLIT: tl.constexpr):
    """The accumulators rescaled by alpha plus P V of a chunk (and of the head's second part with SPLIT)."""
    acc = acc * alpha[:, None] + tl.dot(p.to(vv.dtype), vv, input_precision="ieee")
    if SPLIT:
        acc2 = acc2 * alpha[:, None] + tl.dot(p.to(vv2.dtype), vv2, input_precision="ieee")
    return acc, acc2


@triton.jit
def _eager_softmax(s, m_i, l_i):
    """A chunk's P (scores s, scaled, masked where needed) against the running max moved to the chunk's; (P, the
    factor alpha that rescales what came before, max, sum)."""
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    return p, alpha, m_new, l_i * alpha + tl.sum(p, axis=1)


@triton.jit
def _lazy_softmax(s, m_i, l_i, acc, acc2, qk_scale, SPLIT: tl.constexpr):
    """An unmasked chunk's P (scores s, unscaled) against a running max that moves only when some row's grows by
    more than 2**8; (P, max, sum, acc, acc2) with the sum and accumulators rescaled when it moved."""
    m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
    if tl.max((m_new > m_i + LAZY_GROWTH).to(tl.int32), axis=0) > 0:
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha
        acc = acc * alpha[:, None]
        if SPLIT:
            acc2 = acc2 * alpha[:, None]
        m_i = m_new
    p = tl.exp2(s * qk_scale - m_i[:, None])
    return p, m_i, l_i + tl.sum(p, axis=1), acc, acc2


@triton.jit
def _pv_onto(acc, acc2, p, vv, vv2, SPLIT: tl.constexpr):
    """P V of a chunk added onto the accumulators as they are (and the head's second part with SPLIT)."""
    acc = tl.dot(p.to(vv.dtype), vv, acc, input_precision="ieee")
    if SPLIT:
        acc2 = tl.dot(p.to(vv2.dtype), vv2, acc2, input_precision="ieee")
    return acc, acc2


@triton.jit
def _softmax_step(q, kt, vv, m_i, l_i, acc, qk_scale, q2, kt2, vv2, acc2, SPLIT: tl.constexpr,
                  LAZY: tl.constexpr = False):
    """One unmasked key chunk of the online softmax: (m, l, acc, acc2) after K chunk kt [D, N] and V chunk
    vv [N, D] (and the head's second part kt2, vv2 with SPLIT). LAZY: the running max moves, and the
    accumulators are rescaled, only when some row's max grows by more than 2**8 (P stays below 256; the sum and
    the accumulators share the stale max, so the result is the same)."""
    if LAZY:
        p, m_new, l_i, acc, acc2 = _lazy_softmax(_scores(q, kt, q2, kt2, SPLIT), m_i, l_i, acc, acc2, qk_scale,
                                                 SPLIT)
        acc, acc2 = _pv_onto(acc, acc2, p, vv, vv2, SPLIT)
    else:
        p, alpha, m_new, l_i = _eager_softmax(_scores(q, kt, q2, kt2, SPLIT) * qk_scale, m_i, l_i)
        acc, acc2 = _pv(acc, acc2, alpha, p, vv, vv2, SPLIT)
    return m_new, l_i, acc, acc2


@triton.jit
def _attention_prefill_varlen_kernel(
    q_ptr, k_ptr, v_ptr, cu_ptr, cuk_ptr, used_ptr, bt_ptr, prefix_ptr, map_ptr, out_ptr,
    batch, group, tile_tokens, qk_scale, page, s_bt,
    sq_t, sq_h, sq_d, sk_b, sk_t, sk_h, sk_d, sv_b, sv_t, sv_h, sv_d, so_t, so_h, so_d,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, HEAD_DIM: tl.constexpr,
    SPLIT: tl.constexpr, BLOCK_D2: tl.constexpr,
    SEARCH: tl.constexpr, CAUSAL: tl.constexpr, PAGED: tl.constexpr, USED: tl.constexpr, UNIT: tl.constexpr,
    TILE_MAP: tl.constexpr, PACK_GQA: tl.constexpr, KV_AHEAD: tl.constexpr,
    k_desc=None, v_desc=None, TMA: tl.constexpr = False, WS: tl.constexpr = False, BT_AHEAD: tl.constexpr = False,
    TMA_TAIL: tl.constexpr = False, LAZY: tl.constexpr = False,
):
    # strides arrive divided by UNIT (see _stride_unit); multiplying by the constant proves their divisibility
    sq_t, sq_h, so_t, so_h = sq_t * UNIT, sq_h * UNIT, so_t * UNIT, so_h * UNIT
    sk_b, sk_t, sk_h = sk_b * UNIT, sk_t * UNIT, sk_h * UNIT
    sv_b, sv_t, sv_h = sv_b * UNIT, sv_t * UNIT, sv_h * UNIT
    pid = tl.program_id(0)
    if TILE_MAP:  # program id -> sequence in one load (the map a second small kernel wrote)
        if pid >= tl.load(prefix_ptr + batch):
            return
        b = tl.load(map_ptr + pid)
    else:  # the largest b with prefix[b] <= pid (SEARCH >= log2(batch) halvings, each a dependent load)
        lo = 0
        hi = batch
        for _ in range(SEARCH):
            mid = (lo + hi) // 2
            right = tl.load(prefix_ptr + mid) <= pid
            lo = tl.where(right, mid, lo)
            hi = tl.where(right, hi, mid)
        b = lo
    first_tile = tl.load(prefix_ptr + b)
    n_tiles = tl.load(prefix_ptr + b + 1) - first_tile
    if pid - first_tile >= n_tiles:  # past the last tile of the batch
        return
    q_start = tl.load(cu_ptr + b)
    q_len = tl.load(cu_ptr + b + 1) - q_start
    k_start = tl.load(cuk_ptr + b)
    if USED:
        kv_len = tl.load(used_ptr + b)
    else:
        kv_len = tl.load(cuk_ptr + b + 1) - k_start
    m_tile = n_tiles - 1 - (pid - first_tile)  # heaviest (last) tile first
    shift = kv_len - q_len  # causal: query i sees keys j <= i + shift

    m_start = m_tile * tile_tokens
    rows = tl.arange(0, BLOCK_M)
    if PACK_GQA:  # rows are (token, head of the KV head's group) pairs, the group's heads of a token adjacent
        kv_head = tl.program_id(1)
        offs_m = m_start + rows // group
        heads = kv_head * group + rows % group
        q_head = (heads * sq_h)[:, None]
        o_head = (heads * so_h)[:, None]
        m_ok = (rows < tile_tokens * group) & (offs_m < q_len)
    else:  # rows are tokens of one head (a scalar offset: the compiler sees whole rows)
        head = tl.program_id(1)
        kv_head = head // group
        q_head = head * sq_h
        o_head = head * so_h
        offs_m = m_start + rows
        m_ok = offs_m < q_len
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    # HEAD_DIM is a compile-time constant, so the compiler knows the mask's runs and a padded head (72, 80)
    # still loads 16-byte vectors, given strides it can prove divisible (UNIT)
    d_ok = offs_d < HEAD_DIM
    rows_m = (q_start.to(tl.int64) + offs_m).to(tl.int64)

    q_rows = q_ptr + rows_m[:, None] * sq_t + q_head
    q = tl.load(q_rows + offs_d[None, :] * sq_d, mask=m_ok[:, None] & d_ok[None, :], other=0.0)
    k_base = k_ptr + kv_head * sk_h + offs_d[:, None] * sk_d   # [BLOCK_D, 1] (K read transposed)
    v_base = v_ptr + kv_head * sv_h + offs_d[None, :] * sv_d   # [1, BLOCK_D]
    # SPLIT: a head that is not a power of two is BLOCK_D (a power of two below it) + the rest, padded to
    # BLOCK_D2, each part its own dots (head 72: 64 + 16 of MMA width instead of 128)
    offs_d2 = BLOCK_D + tl.arange(0, BLOCK_D2)
    d2_ok = offs_d2 < HEAD_DIM
    k_base2 = k_ptr + kv_head * sk_h + offs_d2[:, None] * sk_d
    v_base2 = v_ptr + kv_head * sv_h + offs_d2[None, :] * sv_d
    q2 = _load_part(q_rows + offs_d2[None, :] * sq_d, m_ok[:, None] & d2_ok[None, :], q, SPLIT)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_M, BLOCK_D2) if SPLIT else (1, 1), dtype=tl.float32)  # (1, 1): never used

    if CAUSAL:
        n_end = tl.minimum(kv_len, m_start + tile_tokens + shift)
        n_full = tl.maximum(tl.minimum(m_start + shift + 1, kv_len), 0) // BLOCK_N * BLOCK_N
    else:
        n_end = kv_len
        n_full = kv_len // BLOCK_N * BLOCK_N
    if BT_AHEAD:  # paged: the first chunk's cache blocks, read before the loops (then always one chunk ahead)
        blocks = _page_ids(bt_ptr, b, s_bt, page, offs_n0, offs_n0 < kv_len)
    # 1) chunks every row of the tile sees in full: no mask
    if TMA:  # K and V chunks through descriptors over [tokens, kv_heads * head] (contiguous K/V, head = BLOCK_D)
        for n0 in tl.range(0, n_full, BLOCK_N, warp_specialize=WS):
            if PAGED:  # rows [block * page, (block + 1) * page) of the view; a chunk never spans two blocks
                row = tl.load(bt_ptr + b * s_bt + n0 // page) * page + n0 % page
            else:
                row = k_start + n0
            kk = k_desc.load([row, kv_head * BLOCK_D])
            vv = v_desc.load([row, kv_head * BLOCK_D])
            kt = tl.trans(kk)
            m_i, l_i, acc, acc2 = _softmax_step(q, kt, vv, m_i, l_i, acc, qk_scale, q, kt, vv, acc2, False, LAZY)
    elif KV_AHEAD == 2:  # the next chunk's K and V are loaded before this chunk's dots (registers, no stages)
        ok0 = offs_n0 < n_full
        k_rows, v_rows = _kv_rows(bt_ptr, b, s_bt, page, k_start, offs_n0, ok0, sk_b, sk_t, sv_b, sv_t, PAGED)
        kt = tl.load(k_base + k_rows[None, :], mask=d_ok[:, None] & ok0[None, :], other=0.0)
        vv = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :] & ok0[:, None], other=0.0)
        for n0 in range(0, n_full, BLOCK_N):
            nxt = n0 + BLOCK_N + offs_n0
            nxt_ok = nxt < n_full
            k_rows, v_rows = _kv_rows(bt_ptr, b, s_bt, page, k_start, nxt, nxt_ok, sk_b, sk_t, sv_b, sv_t, PAGED)
            kt_next = tl.load(k_base + k_rows[None, :], mask=d_ok[:, None] & nxt_ok[None, :], other=0.0)
            vv_next = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :] & nxt_ok[:, None], other=0.0)
            m_i, l_i, acc, acc2 = _softmax_step(q, kt, vv, m_i, l_i, acc, qk_scale, q, kt, vv, acc2, False, LAZY)
            kt = kt_next
            vv = vv_next
    else:
        for n0 in range(0, n_full, BLOCK_N):
            if BT_AHEAD:  # this chunk's blocks were read a chunk ahead; read the next chunk's now
                k_rows, v_rows = _rows_in_pages(blocks, n0 + offs_n0, page, sk_b, sk_t, sv_b, sv_t)
                blocks = _page_ids(bt_ptr, b, s_bt, page, n0 + BLOCK_N + offs_n0, n0 + BLOCK_N + offs_n0 < kv_len)
            else:
                k_rows, v_rows = _kv_rows(bt_ptr, b, s_bt, page, k_start, n0 + offs_n0, n0 + offs_n0 < kv_len,
                                          sk_b, sk_t, sv_b, sv_t, PAGED)
            kt = tl.load(k_base + k_rows[None, :], mask=d_ok[:, None], other=0.0)
            kt2 = _load_part(k_base2 + k_rows[None, :], d2_ok[:, None], kt, SPLIT)
            if KV_AHEAD:  # V in flight with K, before the first dot
                vv = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :], other=0.0)
                vv2 = _load_part(v_base2 + v_rows[:, None], d2_ok[None, :], vv, SPLIT)
                m_i, l_i, acc, acc2 = _softmax_step(q, kt, vv, m_i, l_i, acc, qk_scale, q2, kt2, vv2, acc2, SPLIT,
                                                    LAZY)
            elif LAZY:
                p, m_i, l_i, acc, acc2 = _lazy_softmax(_scores(q, kt, q2, kt2, SPLIT), m_i, l_i, acc, acc2,
                                                       qk_scale, SPLIT)
                vv = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :], other=0.0)
                vv2 = _load_part(v_base2 + v_rows[:, None], d2_ok[None, :], vv, SPLIT)
                acc, acc2 = _pv_onto(acc, acc2, p, vv, vv2, SPLIT)
            else:
                p, alpha, m_new, l_i = _eager_softmax(_scores(q, kt, q2, kt2, SPLIT) * qk_scale, m_i, l_i)
                vv = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :], other=0.0)
                vv2 = _load_part(v_base2 + v_rows[:, None], d2_ok[None, :], vv, SPLIT)
                acc, acc2 = _pv(acc, acc2, alpha, p, vv, vv2, SPLIT)
                m_i = m_new

    # 2) the rest: the causal diagonal and the sequence's end, masked
    for n0 in range(n_full, n_end, BLOCK_N):
        offs_n = n0 + offs_n0
        n_ok = offs_n < kv_len
        if TMA_TAIL:  # whole boxes as in 1); rows past the sequence's end are masked out of P, and V's are zeroed
            if PAGED:
                row = tl.load(bt_ptr + b * s_bt + n0 // page) * page + n0 % page
            else:
                row = k_start + n0
            kt = tl.trans(k_desc.load([row, kv_head * BLOCK_D]))
            kt2 = kt
            vv = tl.where(n_ok[:, None], v_desc.load([row, kv_head * BLOCK_D]), 0.0)  # a stale slot may be NaN
            vv2 = vv
        elif BT_AHEAD:
            k_rows, v_rows = _rows_in_pages(blocks, offs_n, page, sk_b, sk_t, sv_b, sv_t)
            blocks = _page_ids(bt_ptr, b, s_bt, page, offs_n + BLOCK_N, offs_n + BLOCK_N < kv_len)
        else:
            k_rows, v_rows = _kv_rows(bt_ptr, b, s_bt, page, k_start, offs_n, n_ok, sk_b, sk_t, sv_b, sv_t, PAGED)
        if not TMA_TAIL:
            kt = tl.load(k_base + k_rows[None, :], mask=d_ok[:, None] & n_ok[None, :], other=0.0)
            kt2 = _load_part(k_base2 + k_rows[None, :], d2_ok[:, None] & n_ok[None, :], kt, SPLIT)
        if KV_AHEAD and not TMA_TAIL:
            vv = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :] & n_ok[:, None], other=0.0)
            vv2 = _load_part(v_base2 + v_rows[:, None], d2_ok[None, :] & n_ok[:, None], vv, SPLIT)
        s = _scores(q, kt, q2, kt2, SPLIT) * qk_scale
        vis = n_ok[None, :]
        if CAUSAL:
            vis = vis & (offs_n[None, :] <= offs_m[:, None] + shift)
        p, alpha, m_new, l_i = _eager_softmax(tl.where(vis, s, float("-inf")), m_i, l_i)
        if not KV_AHEAD and not TMA_TAIL:
            vv = tl.load(v_base + v_rows[:, None], mask=d_ok[None, :] & n_ok[:, None], other=0.0)
            vv2 = _load_part(v_base2 + v_rows[:, None], d2_ok[None, :] & n_ok[:, None], vv, SPLIT)
        acc, acc2 = _pv(acc, acc2, alpha, p, vv, vv2, SPLIT)
        m_i = m_new

    l_safe = tl.where(m_ok, l_i, 1.0)
    o_rows = out_ptr + rows_m[:, None] * so_t + o_head
    tl.store(o_rows + offs_d[None, :] * so_d, (acc / l_safe[:, None]).to(out_ptr.dtype.element_ty),
             mask=m_ok[:, None] & d_ok[None, :])
    if SPLIT:
        tl.store(o_rows + offs_d2[None, :] * so_d, (acc2 / l_safe[:, None]).to(out_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & d2_ok[None, :])


@triton.jit
def _parts_combine_kernel(out_ptr, part_acc_ptr, part_m_ptr, part_l_ptr, cu_ptr, cu_k_ptr, used_ptr, prefix_ptr,
                          map_ptr, batch, group, tile_tokens, n_heads, part_stride, so_t, so_h,
                          BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                          PART_CHUNKS: tl.constexpr, CAUSAL: tl.constexpr, USED: tl.constexpr):
    """The output of every query tile whose keys the Gluon kernel split into parts (more than PART_CHUNKS chunks):
    with each part's unnormalised accumulator acc_p and row (max m_p, in log2 units, and sum l_p),
    out = sum_p 2^(m_p - M) acc_p / sum_p 2^(m_p - M) l_p, M the largest m_p (a row that saw no key stays zero).
    Grid and tile lookup as the Gluon kernel's (the same tile map), so each program finds its tile's parts: the
    lines below restate `_query_tile` in Triton (a Gluon function cannot be called from a Triton kernel, and the
    CPU interpreter runs this one); keep the two in step."""
    pid = tl.program_id(0)
    kv_head = tl.program_id(1)
    if pid < tl.load(prefix_ptr + batch):
        b = tl.load(map_ptr + pid)
        first_tile = tl.load(prefix_ptr + b)
        n_tiles = tl.load(prefix_ptr + b + 1) - first_tile
        q_start = tl.load(cu_ptr + b)
        q_len = tl.load(cu_ptr + b + 1) - q_start
        if USED:
            kv_len = tl.load(used_ptr + b)
        else:
            kv_len = tl.load(cu_k_ptr + b + 1) - tl.load(cu_k_ptr + b)
        m_start = (n_tiles - 1 - (pid - first_tile)) * tile_tokens
        if CAUSAL:
            n_end = tl.minimum(kv_len, m_start + tile_tokens + kv_len - q_len)
        else:
            n_end = kv_len
        n_chunks = (n_end + BLOCK_N - 1) // BLOCK_N
        if n_chunks > PART_CHUNKS:
            rows = tl.arange(0, BLOCK_M)
            tokens = m_start + rows // group
            ok = (rows < tile_tokens * group) & (tokens < q_len)
            token = (q_start + tokens).to(tl.int64)
            head = kv_head * group + rows % group
            row = token * n_heads + head
            m_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
            for part in range(0, (n_chunks + PART_CHUNKS - 1) // PART_CHUNKS):
                at = row + part * part_stride  # row is int64; part * part_stride < elements / DIM
                m_max = tl.maximum(m_max, tl.load(part_m_ptr + at, mask=ok, other=float("-inf")))
            m_base = tl.where(m_max == float("-inf"), 0.0, m_max)
            cols = tl.arange(0, BLOCK_D)
            mask = ok[:, None] & (cols < DIM)[None, :]
            acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
            l_sum = tl.zeros([BLOCK_M], tl.float32)
            for part in range(0, (n_chunks + PART_CHUNKS - 1) // PART_CHUNKS):
                at = row + part * part_stride  # row is int64; part * part_stride < elements / DIM
                w = tl.exp2(tl.load(part_m_ptr + at, mask=ok, other=float("-inf")) - m_base)
                l_sum += w * tl.load(part_l_ptr + at, mask=ok, other=0.0)
                acc += w[:, None] * tl.load(part_acc_ptr + at[:, None] * DIM + cols[None, :], mask=mask, other=0.0)
            out = acc / tl.where(l_sum == 0.0, 1.0, l_sum)[:, None]
            tl.store(out_ptr + (token * so_t + head * so_h)[:, None] + cols[None, :],
                     out.to(out_ptr.dtype.element_ty), mask=mask)


# ---- Hopper: paged caches through per-page TMA copies (Gluon) ----------------------------------------------------
# A chunk of BLOCK_N keys spans BLOCK_N / page blocks of a paged cache. Triton's pipeliner streams a chunk only when
# one TMA box holds it (a block), so pages smaller than a chunk fall back to gathers; the kernel below, written in
# Gluon (Triton's explicit-layout dialect), copies each page of a chunk with its own TMA copy into one slot of a
# STAGES-deep shared-memory ring, all on the slot's mbarrier, and runs both dots as warpgroup MMAs from shared
# memory. Each warpgroup (4 warps) owns 64 packed GQA rows (BLOCK_M = 16 * num_warps). V rows past a sequence's end
# are zeroed in shared memory before P V reads them (a stale slot may hold NaN). With OVERLAP (3+ stages) the next
# chunk's Q K^T is issued before this chunk's softmax. BT_AHEAD loads a chunk's block ids one chunk before its
# copies are issued, so no copy waits on a block-table read.
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia import hopper
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor

    HAS_GLUON = True
except ImportError:  # a Triton without Gluon: the Triton kernel serves every case
    HAS_GLUON = False

if HAS_GLUON:
    # a CTA-wide barrier: `barrier` in newer Gluon, `thread_barrier` in older releases
    _cta_sync = gl.barrier if hasattr(gl, "barrier") else gl.thread_barrier
    # newer Gluon gives an asynchronous MMA's result its own type, which a loop-carried accumulator must have
    _MMA_INIT = gl.constexpr(hasattr(hopper, "warpgroup_mma_init"))
    _mma_init = getattr(hopper, "warpgroup_mma_init", None)

    @gluon.constexpr_function
    def _mma_layout(cols, num_warps):
        """The register layout of a warpgroup MMA's [rows, cols] result (rows split over the warps)."""
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, cols, 16])

    @gluon.constexpr_function
    def _rows_layout(cols, num_warps):
        """A blocked register layout for [rows, cols] tiles of 16-bit values: 16-byte runs of a row a thread, as
        many threads across a row as it has runs (at most 8)."""
        across = max(1, min(8, cols // 8))
        return gl.BlockedLayout([1, 8], [32 // across, across], [num_warps, 1], [1, 0])

    @gluon.jit
    def _as_accumulator(acc):
        if _MMA_INIT:
            acc = _mma_init(acc)
        return acc

    @gluon.jit
    def _query_tile(tile, prefix_ptr, map_ptr, cu_ptr, cu_k_ptr, used_ptr, tile_tokens, CAUSAL: gl.constexpr,
                    USED: gl.constexpr, ONE_SEQ: gl.constexpr = False):
        """Query tile `tile` as (sequence, first query row, query length, key length, the tile's first token, the
        key its chunks end at); a sequence's tiles run from its last (heaviest when causal) to its first.
        ONE_SEQ: the batch is one sequence, whose tiles are counted here (no prefix or map is read)."""
        if ONE_SEQ:
            b = tile * 0
            first_tile = tile * 0
            q_start = gl.load(cu_ptr)
            q_len = gl.load(cu_ptr + 1) - q_start
            n_tiles = (q_len + tile_tokens - 1) // tile_tokens
        else:
            b = gl.load(map_ptr + tile)
            first_tile = gl.load(prefix_ptr + b)
            n_tiles = gl.load(prefix_ptr + b + 1) - first_tile
            q_start = gl.load(cu_ptr + b)
            q_len = gl.load(cu_ptr + b + 1) - q_start
        if USED:
            kv_len = gl.load(used_ptr + b)
        else:
            kv_len = gl.load(cu_k_ptr + b + 1) - gl.load(cu_k_ptr + b)
        m_start = (n_tiles - 1 - (tile - first_tile)) * tile_tokens
        if CAUSAL:  # bottom-right aligned: query i sees keys j <= i + kv_len - q_len
            n_end = gl.minimum(kv_len, m_start + tile_tokens + kv_len - q_len)
        else:
            n_end = kv_len
        return b, q_start, q_len, kv_len, m_start, n_end

    @gluon.jit
    def _tile_rows(layout: gl.constexpr, BLOCK_M: gl.constexpr, m_start, group, tile_tokens, q_start, q_len,
                   kv_head):
        """A query tile's rows in `layout`'s row slice: (token of q/out as int64, head, whether the row is in the
        tile and the sequence); rows are (token, head of the KV head's group) pairs."""
        rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))
        tokens = m_start + rows // group
        ok = (rows < tile_tokens * group) & (tokens < q_len)
        return (q_start + tokens).to(gl.int64), kv_head * group + rows % group, ok

    @gluon.jit
    def _chunk_blocks(bt_ptr, b, s_bt, kv_len, chunk, BLOCK_N: gl.constexpr, BOX: gl.constexpr,
                      PAGE: gl.constexpr, num_warps: gl.constexpr):
        """The block ids of chunk `chunk`'s BLOCK_N / BOX boxes (a box never spans two blocks); a box past the
        sequence's end reads its first block instead (any valid block: its keys are masked, its V rows zeroed)."""
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
        keys = chunk * BLOCK_N + gl.arange(0, BLOCK_N // BOX, layout=layout) * BOX
        return gl.load(bt_ptr + b * s_bt + gl.where(keys < kv_len, keys, 0) // PAGE)

    @gluon.jit
    def _issue_chunk(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, bars, blocks, kv_len,
                     kv_col, chunk, slot, BLOCK_N: gl.constexpr, BOX: gl.constexpr, PAGE: gl.constexpr,
                     HEAD: gl.constexpr, HEAD2: gl.constexpr, num_warps: gl.constexpr):
        """TMA copies of chunk `chunk`'s K and V rows (blocks: its boxes' block ids) into ring slot `slot`, one box
        at a time, so the slot always receives the bytes its barrier expects; with HEAD2 also the head's second
        part (columns HEAD.. of the head) into the second rings."""
        bar = bars.index(slot)
        if HEAD2 > 0:
            mbarrier.expect(bar, 2 * (BLOCK_N // BOX) * (k_desc.block_type.nbytes + k2_desc.block_type.nbytes))
        else:
            mbarrier.expect(bar, 2 * (BLOCK_N // BOX) * k_desc.block_type.nbytes)
        box_of = gl.arange(0, BLOCK_N // BOX, layout=gl.BlockedLayout([1], [32], [num_warps], [0]))
        for j in gl.static_range(BLOCK_N // BOX):
            key = chunk * BLOCK_N + j * BOX
            key = gl.where(key < kv_len, key, 0)
            block = gl.sum(gl.where(box_of == j, blocks, 0), axis=0)
            row = block * PAGE + key % PAGE
            tma.async_copy_global_to_shared(k_desc, [row, kv_col], bar, k_ring.index(slot).slice(j * BOX, BOX))
            tma.async_copy_global_to_shared(v_desc, [row, kv_col], bar, v_ring.index(slot).slice(j * BOX, BOX))
            if HEAD2 > 0:
                tma.async_copy_global_to_shared(k2_desc, [row, kv_col + HEAD], bar,
                                                k2_ring.index(slot).slice(j * BOX, BOX))
                tma.async_copy_global_to_shared(v2_desc, [row, kv_col + HEAD], bar,
                                                v2_ring.index(slot).slice(j * BOX, BOX))

    @gluon.jit
    def _refill(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, bars, blocks, bt_ptr, b, s_bt,
                kv_len, kv_col, ahead, first, n_chunks, STAGES: gl.constexpr, BLOCK_N: gl.constexpr,
                BOX: gl.constexpr, PAGE: gl.constexpr, HEAD: gl.constexpr, HEAD2: gl.constexpr,
                BT_AHEAD: gl.constexpr, num_warps: gl.constexpr):
        """The copies of chunk `ahead` (when it is below n_chunks) into its ring slot, counted from chunk `first`
        (the program's first); returns the block ids the next refill starts from (with BT_AHEAD those of chunk
        ahead + 1, read now; otherwise read at the refill)."""
        if not BT_AHEAD:
            blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, ahead, BLOCK_N, BOX, PAGE, num_warps)
        if ahead < n_chunks:
            _issue_chunk(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, bars, blocks, kv_len,
                         kv_col, ahead, (ahead - first) % STAGES, BLOCK_N, BOX, PAGE, HEAD, HEAD2, num_warps)
        if BT_AHEAD:
            blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, ahead + 1, BLOCK_N, BOX, PAGE, num_warps)
        return blocks

    @gluon.jit
    def _zero_rows_from(tile, first, BLOCK_N: gl.constexpr, WIDTH: gl.constexpr, num_warps: gl.constexpr):
        """Rows first.. of a [BLOCK_N, WIDTH] shared tile set to zero (then fenced for the MMA that reads it)."""
        layout: gl.constexpr = _rows_layout(WIDTH, num_warps)
        values = tile.load(layout)
        rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
        tile.store(gl.where((rows < first)[:, None], values, gl.zeros_like(values)))
        fence_async_shared()

    @gluon.jit
    def _online_softmax(s, keys, last_key, kv_len, qk_scale, m_i, l_i, CAUSAL: gl.constexpr,
                        MASKED: gl.constexpr = True, LAZY: gl.constexpr = False):
        """One chunk of the online softmax: P (unnormalised), the factor alpha that rescales what came before,
        the running (max, sum) after keys `keys` whose scores are s, and whether alpha must be applied. MASKED: a
        key past the sequence, or past a row's last key when causal, is out; without it every key of the chunk
        counts for every row, and the scale folds into the exponent (one FMA an element). LAZY: the running max
        moves only when some row's grows by more than LAZY_GROWTH (log2 units, over the whole tile), so most
        chunks leave the accumulator as it is; P stays below 2**LAZY_GROWTH and the sum and accumulator use the
        same stale max, so the result is the same."""
        if MASKED:
            visible = (keys < kv_len)[None, :]
            if CAUSAL:
                visible = visible & (keys[None, :] <= last_key[:, None])
            s = gl.where(visible, s * qk_scale, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(s, axis=1))
        else:
            m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        rescale = kv_len >= 0  # true (a runtime scalar, as LAZY's is); read only with LAZY
        if LAZY:
            grown = gl.max((m_new > m_i + LAZY_GROWTH).to(gl.int32), axis=0) > 0
            m_new = gl.where(grown, m_new, m_i)
            rescale = grown
        m_base = gl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet stays at zero weight
        alpha = gl.exp2(m_i - m_base)
        if MASKED:
            p = gl.exp2(s - m_base[:, None])
        else:
            p = gl.exp2(s * qk_scale - m_base[:, None])
        return p, alpha, m_new, l_i * alpha + gl.sum(p, axis=1), rescale

    @gluon.jit
    def _chunk_softmax(s, chunk, n_full, cols, last_key, kv_len, qk_scale, m_i, l_i, BLOCK_N: gl.constexpr,
                       CAUSAL: gl.constexpr, FULL: gl.constexpr, LAZY: gl.constexpr):
        """`_online_softmax` of chunk `chunk`; with FULL the chunks below n_full (every key visible to every row
        of the tile) skip the masks."""
        keys = chunk * BLOCK_N + cols
        if FULL:
            if chunk < n_full:
                p, alpha, m_i, l_i, rescale = _online_softmax(s, keys, last_key, kv_len, qk_scale, m_i, l_i, CAUSAL,
                                                              False, LAZY)
            else:
                p, alpha, m_i, l_i, rescale = _online_softmax(s, keys, last_key, kv_len, qk_scale, m_i, l_i, CAUSAL,
                                                              True, LAZY)
        else:
            p, alpha, m_i, l_i, rescale = _online_softmax(s, keys, last_key, kv_len, qk_scale, m_i, l_i, CAUSAL,
                                                          True, LAZY)
        return p, alpha, m_i, l_i, rescale

    @gluon.jit
    def _rescaled(acc, alpha, rescale, o_layout: gl.constexpr, LAZY: gl.constexpr):
        """The accumulator times alpha (row by row); with LAZY only when `_online_softmax` says so."""
        if LAZY:
            if rescale:
                acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        else:
            acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        return acc

    @gluon.jit
    def _issue_pv(acc, p, v_tile, chunk, kv_len, BLOCK_N: gl.constexpr, p_layout: gl.constexpr,
                  num_warps: gl.constexpr):
        """P V of a chunk onto the (rescaled) accumulator, issued (not waited for); a chunk the sequence ends in
        has V's rows past the end zeroed first."""
        if (chunk + 1) * BLOCK_N > kv_len:
            _zero_rows_from(v_tile, kv_len - chunk * BLOCK_N, BLOCK_N, v_tile.shape[1], num_warps)
        return warpgroup_mma(gl.convert_layout(p.to(v_tile.dtype), p_layout), v_tile, acc, is_async=True)

    @gluon.jit
    def _ws_copies(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, ready, empty, bt_ptr, b,
                   s_bt, kv_len, kv_col, n_chunks, STAGES: gl.constexpr, BLOCK_N: gl.constexpr, BOX: gl.constexpr,
                   PAGE: gl.constexpr, HEAD: gl.constexpr, HEAD2: gl.constexpr):
        """WS's copy partition (one warp): each chunk's block ids, then its copies (both parts of a split head)
        into its ring slot once the attention partition has released the slot (`empty`; a fresh barrier passes
        the first round's wait)."""
        for chunk in range(n_chunks):
            slot = chunk % STAGES
            blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, chunk, BLOCK_N, BOX, PAGE, 1)
            mbarrier.wait(empty.index(slot), ((chunk // STAGES) & 1) ^ 1)
            _issue_chunk(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, ready, blocks, kv_len,
                         kv_col, chunk, slot, BLOCK_N, BOX, PAGE, HEAD, HEAD2, 1)

    @gluon.jit
    def _ws_attend(q_smem, k_ring, v_ring, q2_smem, k2_ring, v2_ring, ready, empty, n_chunks, n_full, s_last,
                   kv_len, qk_scale, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD: gl.constexpr,
                   HEAD2: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, FULL: gl.constexpr,
                   num_warps: gl.constexpr):
        """WS's attention partition (the kernel's warps): per chunk, wait for its copies, Q K^T (a split head's
        second part accumulated onto it), the online softmax, P V (into each part's accumulator), then release
        the slot to the copy partition; returns (accumulator, second part's accumulator, row sums), the
        accumulator twice without a second part."""
        s_layout: gl.constexpr = _mma_layout(BLOCK_N, num_warps)
        o_layout: gl.constexpr = _mma_layout(HEAD, num_warps)
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        s_cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
        l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
        acc = gl.zeros([BLOCK_M, HEAD], gl.float32, layout=o_layout)
        if HEAD2 > 0:
            o2_layout: gl.constexpr = _mma_layout(HEAD2, num_warps)
            p2_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o2_layout, k_width=2)
            acc2 = gl.zeros([BLOCK_M, HEAD2], gl.float32, layout=o2_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        for chunk in range(n_chunks):
            slot = chunk % STAGES
            mbarrier.wait(ready.index(slot), (chunk // STAGES) & 1)
            s = warpgroup_mma(q_smem, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
            if HEAD2 > 0:
                s = warpgroup_mma(q2_smem, k2_ring.index(slot).permute((1, 0)), s, is_async=True)
            s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
            p, alpha, m_i, l_i, rescale = _chunk_softmax(s, chunk, n_full, s_cols, s_last, kv_len, qk_scale, m_i,
                                                         l_i, BLOCK_N, CAUSAL, FULL, False)
            acc = _rescaled(acc, alpha, rescale, o_layout, False)
            acc = _issue_pv(acc, p, v_ring.index(slot), chunk, kv_len, BLOCK_N, p_layout, num_warps)
            if HEAD2 > 0:
                acc2 = _rescaled(acc2, alpha, rescale, o2_layout, False)
                acc2 = _issue_pv(acc2, p, v2_ring.index(slot), chunk, kv_len, BLOCK_N, p2_layout, num_warps)
                acc, acc2 = warpgroup_mma_wait(num_outstanding=0, deps=(acc, acc2))
            else:
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            _cta_sync()  # every warp's MMAs have read the slot before it is handed back
            mbarrier.arrive(empty.index(slot), count=1)
        if HEAD2 > 0:
            return acc, acc2, l_i
        else:
            return acc, acc, l_i

    @gluon.jit
    def _paged_attention_gluon_kernel(
            q_ptr, out_ptr, k_desc, v_desc, k2_desc, v2_desc, bt_ptr, cu_ptr, cu_k_ptr, used_ptr, prefix_ptr,
            map_ptr, batch, group, tile_tokens, qk_scale, s_bt, sq_t, sq_h, so_t, so_h,
            Q_LAYOUT: gl.constexpr, Q2_LAYOUT: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
            HEAD: gl.constexpr, HEAD2: gl.constexpr, DIM: gl.constexpr, BOX: gl.constexpr, PAGE: gl.constexpr,
            STAGES: gl.constexpr, CAUSAL: gl.constexpr, USED: gl.constexpr, OVERLAP: gl.constexpr,
            BT_AHEAD: gl.constexpr, FULL: gl.constexpr, LAZY: gl.constexpr, WS: gl.constexpr,
            WS_REGS: gl.constexpr, part_acc_ptr=None, part_m_ptr=None, part_l_ptr=None, part_stride=0,
            n_heads=0, PART_CHUNKS: gl.constexpr = 0, ONE_SEQ: gl.constexpr = False, num_warps: gl.constexpr = 4):
        """One query tile of one KV head (FULL and LAZY: `_chunk_softmax`, `_online_softmax`). HEAD2 > 0 (a head of DIM = HEAD + up to HEAD2 columns, HEAD and HEAD2
        powers of two): the head's columns HEAD.. are a second part with its own rings, Q tile, Q K^T step and
        accumulator, so the MMAs run HEAD + HEAD2 wide instead of the next power of two; the second part's
        columns past DIM read the next head's values (or zeros past the last) and are never stored, their Q
        columns zero. Without OVERLAP only.
        PART_CHUNKS > 0 (split keys; not with OVERLAP or WS): grid axis 2 is a part of the tile's keys,
        PART_CHUNKS chunks each; a tile of more than one part writes each part's unnormalised accumulator and row
        (max, sum) to the part buffers and `_parts_combine_kernel` merges them; a tile of one part writes its
        output as before.
        ONE_SEQ (a batch of one sequence): the tiles are counted from cu_seqlens, so no prefix kernel runs first
        (prefix_ptr and map_ptr are not read)."""
        pid = gl.program_id(0)
        kv_head = gl.program_id(1)
        if ONE_SEQ:
            n_tiles = (gl.load(cu_ptr + 1) - gl.load(cu_ptr) + tile_tokens - 1) // tile_tokens
        else:
            n_tiles = gl.load(prefix_ptr + batch)
        if pid < n_tiles:  # surplus programs of the grid's bound store nothing
            b, q_start, q_len, kv_len, m_start, n_end = _query_tile(pid, prefix_ptr, map_ptr, cu_ptr, cu_k_ptr,
                                                                    used_ptr, tile_tokens, CAUSAL, USED, ONE_SEQ)
            n_chunks = (n_end + BLOCK_N - 1) // BLOCK_N
            if PART_CHUNKS > 0:  # this program's chunks [c0, c1); a part past the tile's chunks has none
                gl.static_assert(not OVERLAP and not WS, "split keys have no OVERLAP or WS form")
                c0 = gl.program_id(2) * PART_CHUNKS
                c1 = gl.minimum(n_chunks, c0 + PART_CHUNKS)
                active = (c0 == 0) | (c0 < n_chunks)
            else:
                c0 = 0
                c1 = n_chunks
                active = True
            if active:
                _paged_attention_tile(
                    q_ptr, out_ptr, k_desc, v_desc, k2_desc, v2_desc, bt_ptr, b, q_start, q_len, kv_len, m_start,
                    n_chunks, c0, c1, kv_head, group, tile_tokens, qk_scale, s_bt, sq_t, sq_h, so_t, so_h,
                    part_acc_ptr, part_m_ptr, part_l_ptr, part_stride, n_heads, Q_LAYOUT, Q2_LAYOUT, BLOCK_M,
                    BLOCK_N, HEAD, HEAD2, DIM, BOX, PAGE, STAGES, CAUSAL, OVERLAP, BT_AHEAD, FULL, LAZY, WS, WS_REGS,
                    PART_CHUNKS, num_warps)

    @gluon.jit
    def _paged_attention_tile(
            q_ptr, out_ptr, k_desc, v_desc, k2_desc, v2_desc, bt_ptr, b, q_start, q_len, kv_len, m_start, n_chunks,
            c0, c1, kv_head, group, tile_tokens, qk_scale, s_bt, sq_t, sq_h, so_t, so_h, part_acc_ptr, part_m_ptr,
            part_l_ptr, part_stride, n_heads, Q_LAYOUT: gl.constexpr, Q2_LAYOUT: gl.constexpr,
            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD: gl.constexpr, HEAD2: gl.constexpr,
            DIM: gl.constexpr, BOX: gl.constexpr, PAGE: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
            OVERLAP: gl.constexpr, BT_AHEAD: gl.constexpr, FULL: gl.constexpr, LAZY: gl.constexpr,
            WS: gl.constexpr, WS_REGS: gl.constexpr, PART_CHUNKS: gl.constexpr, num_warps: gl.constexpr):
        """`_paged_attention_gluon_kernel`'s work on one query tile, chunks c0..c1 of its n_chunks."""
        shift = kv_len - q_len  # causal, bottom-right aligned: query i sees keys j <= i + shift
        # chunks every row of the tile sees whole: keys below the sequence's end and the first row's last key
        if CAUSAL:
            n_full = gl.minimum(kv_len, m_start + shift + 1) // BLOCK_N
        else:
            n_full = kv_len // BLOCK_N
        kv_col = kv_head * DIM

        k_ring = gl.allocate_shared_memory(k_desc.block_type.element_ty, [STAGES, BLOCK_N, HEAD], k_desc.layout)
        v_ring = gl.allocate_shared_memory(v_desc.block_type.element_ty, [STAGES, BLOCK_N, HEAD], v_desc.layout)
        if HEAD2 > 0:
            k2_ring = gl.allocate_shared_memory(k2_desc.block_type.element_ty, [STAGES, BLOCK_N, HEAD2],
                                                k2_desc.layout)
            v2_ring = gl.allocate_shared_memory(v2_desc.block_type.element_ty, [STAGES, BLOCK_N, HEAD2],
                                                v2_desc.layout)
        else:  # never read: the copies and MMAs of the second part are not compiled
            k2_ring = k_ring
            v2_ring = v_ring
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for ring_slot in gl.static_range(STAGES):
            mbarrier.init(bars.index(ring_slot), count=1)
        if WS:  # the copy partition's "slot free" barriers
            empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            for ring_slot in gl.static_range(STAGES):
                mbarrier.init(empty.index(ring_slot), count=1)
        if not WS:  # (WS: the copy partition issues every chunk)
            for first in gl.static_range(STAGES - 1):  # the first chunks in flight before Q is read
                if c0 + first < c1:
                    blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, c0 + first, BLOCK_N, BOX, PAGE, num_warps)
                    _issue_chunk(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, bars,
                                 blocks, kv_len, kv_col, c0 + first, first, BLOCK_N, BOX, PAGE, HEAD, HEAD2,
                                 num_warps)
            # the block ids of the first chunk the loop copies (with BT_AHEAD; otherwise read in the loop)
            blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, c0 + STAGES - 1, BLOCK_N, BOX, PAGE, num_warps)

        # Q: rows are (token, head of the KV head's group) pairs, loaded by pointers, kept in shared memory
        q_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
        cols = gl.arange(0, HEAD, layout=gl.SliceLayout(0, q_layout))
        token, head, rows_ok = _tile_rows(q_layout, BLOCK_M, m_start, group, tile_tokens, q_start, q_len, kv_head)
        q = gl.load(q_ptr + (token * sq_t + head * sq_h)[:, None] + cols[None, :], mask=rows_ok[:, None], other=0.0)
        q_smem = gl.allocate_shared_memory(q.dtype, [BLOCK_M, HEAD], Q_LAYOUT, q)
        if HEAD2 > 0:  # the second part's columns past the head read as zeros
            q2_layout: gl.constexpr = _rows_layout(HEAD2, num_warps)
            cols2 = HEAD + gl.arange(0, HEAD2, layout=gl.SliceLayout(0, q2_layout))
            token2, head2, rows2_ok = _tile_rows(q2_layout, BLOCK_M, m_start, group, tile_tokens, q_start, q_len,
                                                 kv_head)
            cols2_ok = (cols2 < DIM)[None, :]
            q2 = gl.load(q_ptr + (token2 * sq_t + head2 * sq_h)[:, None] + cols2[None, :],
                         mask=rows2_ok[:, None] & cols2_ok, other=0.0)
            q2_smem = gl.allocate_shared_memory(q2.dtype, [BLOCK_M, HEAD2], Q2_LAYOUT, q2)
        fence_async_shared()

        s_layout: gl.constexpr = _mma_layout(BLOCK_N, num_warps)
        o_layout: gl.constexpr = _mma_layout(HEAD, num_warps)
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        s_rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
        s_cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        s_last = m_start + s_rows // group + shift  # the last key each row sees (causal)
        m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
        l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
        acc = gl.zeros([BLOCK_M, HEAD], gl.float32, layout=o_layout)
        if HEAD2 > 0:
            o2_layout: gl.constexpr = _mma_layout(HEAD2, num_warps)
            p2_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o2_layout, k_width=2)
            acc2 = gl.zeros([BLOCK_M, HEAD2], gl.float32, layout=o2_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        if WS:
            gl.static_assert(not OVERLAP and not LAZY, "WS has no OVERLAP or LAZY form")
            if HEAD2 > 0:
                acc, acc2, l_i = gl.warp_specialize(
                    [(_ws_attend, (q_smem, k_ring, v_ring, q2_smem, k2_ring, v2_ring, bars, empty, n_chunks, n_full,
                                   s_last, kv_len, qk_scale, BLOCK_M, BLOCK_N, HEAD, HEAD2, STAGES, CAUSAL, FULL,
                                   num_warps)),
                     (_ws_copies, (k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, bars, empty,
                                   bt_ptr, b, s_bt, kv_len, kv_col, n_chunks, STAGES, BLOCK_N, BOX, PAGE, HEAD,
                                   HEAD2))],
                    [1], [WS_REGS])
            else:
                acc, _, l_i = gl.warp_specialize(
                    [(_ws_attend, (q_smem, k_ring, v_ring, q_smem, k_ring, v_ring, bars, empty, n_chunks, n_full,
                                   s_last, kv_len, qk_scale, BLOCK_M, BLOCK_N, HEAD, 0, STAGES, CAUSAL, FULL,
                                   num_warps)),
                     (_ws_copies, (k_desc, v_desc, k_ring, v_ring, k_desc, v_desc, k_ring, v_ring, bars, empty,
                                   bt_ptr, b, s_bt, kv_len, kv_col, n_chunks, STAGES, BLOCK_N, BOX, PAGE, HEAD, 0))],
                    [1], [WS_REGS])
            for ring_slot in gl.static_range(STAGES):
                mbarrier.invalidate(empty.index(ring_slot))
        elif OVERLAP:  # chunk i+1's Q K^T in flight while chunk i's softmax runs (STAGES >= 3)
            mbarrier.wait(bars.index(0), 0, pred=n_chunks > 0)
            s_cur = warpgroup_mma(q_smem, k_ring.index(0).permute((1, 0)), s_zero, use_acc=False,
                                  is_async=True)
            acc = _as_accumulator(acc)
            for chunk in range(n_chunks):
                slot = chunk % STAGES
                nxt = chunk + 1  # past the end: a discarded product of a slot no copy is writing
                mbarrier.wait(bars.index(nxt % STAGES), (nxt // STAGES) & 1, pred=nxt < n_chunks)
                s_next = warpgroup_mma(q_smem, k_ring.index(nxt % STAGES).permute((1, 0)), s_zero,
                                       use_acc=False, is_async=True)
                s, acc = warpgroup_mma_wait(num_outstanding=1, deps=(s_cur, acc))  # all but chunk i+1's QK^T
                if num_warps > 4:
                    _cta_sync()
                ahead = chunk + STAGES - 1  # into chunk i-1's slot, whose P V just completed
                gl.static_assert(HEAD2 == 0, "OVERLAP has no split-head form")
                blocks = _refill(k_desc, v_desc, k_ring, v_ring, k_desc, v_desc, k_ring, v_ring, bars, blocks,
                                 bt_ptr, b, s_bt, kv_len, kv_col, ahead, 0, n_chunks, STAGES, BLOCK_N, BOX,
                                 PAGE, HEAD, 0, BT_AHEAD, num_warps)
                p, alpha, m_i, l_i, rescale = _chunk_softmax(s, chunk, n_full, s_cols, s_last, kv_len, qk_scale,
                                                             m_i, l_i, BLOCK_N, CAUSAL, FULL, LAZY)
                acc = _rescaled(acc, alpha, rescale, o_layout, LAZY)
                acc = _issue_pv(acc, p, v_ring.index(slot), chunk, kv_len, BLOCK_N, p_layout, num_warps)
                s_cur = s_next
            acc, s_cur = warpgroup_mma_wait(num_outstanding=0, deps=(acc, s_cur))
        else:
            for chunk in range(c0, c1):
                ahead = chunk + STAGES - 1  # into the slot the previous chunk freed (its MMAs were waited for)
                if num_warps > 4:  # by every warpgroup: the other one may still be reading that slot
                    _cta_sync()
                blocks = _refill(k_desc, v_desc, k_ring, v_ring, k2_desc, v2_desc, k2_ring, v2_ring, bars, blocks,
                                 bt_ptr, b, s_bt, kv_len, kv_col, ahead, c0, c1, STAGES, BLOCK_N, BOX, PAGE,
                                 HEAD, HEAD2, BT_AHEAD, num_warps)
                slot = (chunk - c0) % STAGES
                mbarrier.wait(bars.index(slot), ((chunk - c0) // STAGES) & 1)
                s = warpgroup_mma(q_smem, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False,
                                  is_async=True)
                if HEAD2 > 0:  # the second part's Q K^T accumulates onto the first's
                    s = warpgroup_mma(q2_smem, k2_ring.index(slot).permute((1, 0)), s, is_async=True)
                s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
                p, alpha, m_i, l_i, rescale = _chunk_softmax(s, chunk, n_full, s_cols, s_last, kv_len, qk_scale,
                                                             m_i, l_i, BLOCK_N, CAUSAL, FULL, LAZY)
                acc = _rescaled(acc, alpha, rescale, o_layout, LAZY)
                acc = _issue_pv(acc, p, v_ring.index(slot), chunk, kv_len, BLOCK_N, p_layout, num_warps)
                if HEAD2 > 0:
                    acc2 = _rescaled(acc2, alpha, rescale, o2_layout, LAZY)
                    acc2 = _issue_pv(acc2, p, v2_ring.index(slot), chunk, kv_len, BLOCK_N, p2_layout, num_warps)
                    acc, acc2 = warpgroup_mma_wait(num_outstanding=0, deps=(acc, acc2))
                else:
                    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        for ring_slot in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(ring_slot))

        if PART_CHUNKS > 0:
            if n_chunks > PART_CHUNKS:  # one part of several: unnormalised, with the row (max, sum)
                at = (c0 // PART_CHUNKS).to(gl.int64) * part_stride  # this part's rows in the part buffers
                row = at + token * n_heads + head
                _park_part(part_acc_ptr, acc, row, cols, rows_ok[:, None], DIM, q_layout)
                ml_layout: gl.constexpr = gl.SliceLayout(1, q_layout)
                gl.store(part_m_ptr + row, gl.convert_layout(m_i, ml_layout), mask=rows_ok)
                gl.store(part_l_ptr + row, gl.convert_layout(l_i, ml_layout), mask=rows_ok)
                if HEAD2 > 0:
                    _park_part(part_acc_ptr, acc2, at + token2 * n_heads + head2, cols2,
                               rows2_ok[:, None] & cols2_ok, DIM, q2_layout)
            else:
                _store_part(out_ptr, acc, l_i, token, head, cols, rows_ok[:, None], so_t, so_h, o_layout, q_layout)
                if HEAD2 > 0:
                    _store_part(out_ptr, acc2, l_i, token2, head2, cols2, rows2_ok[:, None] & cols2_ok, so_t, so_h,
                                o2_layout, q2_layout)
        else:
            _store_part(out_ptr, acc, l_i, token, head, cols, rows_ok[:, None], so_t, so_h, o_layout, q_layout)
            if HEAD2 > 0:
                _store_part(out_ptr, acc2, l_i, token2, head2, cols2, rows2_ok[:, None] & cols2_ok, so_t, so_h,
                            o2_layout, q2_layout)

    @gluon.jit
    def _store_part(out_ptr, acc, l_i, token, head, cols, mask, so_t, so_h, o_layout: gl.constexpr,
                    layout: gl.constexpr):
        """Output columns `cols` of a tile: acc / l row by row (a row that saw no key stays zero), stored through
        `layout` (16-byte runs of a row a thread rather than the MMA's 4-byte pairs)."""
        l_o = gl.convert_layout(gl.where(l_i == 0.0, 1.0, l_i), gl.SliceLayout(1, o_layout))
        o = gl.convert_layout((acc / l_o[:, None]).to(out_ptr.dtype.element_ty), layout)
        gl.store(out_ptr + (token * so_t + head * so_h)[:, None] + cols[None, :], o, mask=mask)

    @gluon.jit
    def _park_part(part_acc_ptr, acc, row, cols, mask, DIM: gl.constexpr, layout: gl.constexpr):
        """Columns `cols` of a key part's unnormalised fp32 accumulator, at `row` ([part, token, head]) of the
        part buffer [parts, tokens, heads, DIM]."""
        gl.store(part_acc_ptr + row[:, None] * DIM + cols[None, :], gl.convert_layout(acc, layout), mask=mask)

    @gluon.jit
    def _work_item(item, n_items, kv_heads, prefix_ptr, map_ptr, cu_ptr, cu_k_ptr, used_ptr, tile_tokens,
                   BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr, USED: gl.constexpr):
        """Work item `item` (tile * kv_heads + KV head) as (sequence, KV head, first query row, query length, key
        length, the tile's first token, chunks); at least one chunk, so an item whose rows see no key still
        writes its zeros through the loop. An item past the last reads the last one's (never used)."""
        item = gl.minimum(item, n_items - 1)
        b, q_start, q_len, kv_len, m_start, n_end = _query_tile(item // kv_heads, prefix_ptr, map_ptr, cu_ptr,
                                                                cu_k_ptr, used_ptr, tile_tokens, CAUSAL, USED)
        return b, item % kv_heads, q_start, q_len, kv_len, m_start, gl.maximum((n_end + BLOCK_N - 1) // BLOCK_N, 1)

    @gluon.jit
    def _paged_attention_gluon_persistent_kernel(
            q_ptr, out_ptr, k_desc, v_desc, bt_ptr, cu_ptr, cu_k_ptr, used_ptr, prefix_ptr, map_ptr,
            batch, group, kv_heads, tile_tokens, qk_scale, s_bt, sq_t, sq_h, so_t, so_h,
            Q_LAYOUT: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD: gl.constexpr,
            BOX: gl.constexpr, PAGE: gl.constexpr, CAUSAL: gl.constexpr, USED: gl.constexpr,
            num_warps: gl.constexpr):
        """The kernel above as a persistent grid: a program walks work items pid, pid + programs, ... and its
        chunks form one stream through a 2-slot ring, so the first chunk of the next item is copied while the
        last of this one is computed, and the next item's sequence lookups are read during this item's chunks
        (a short sequence's tile has few chunks; per program, those lookups, the first copy and the Q load were
        latencies no chunk hid)."""
        STAGES: gl.constexpr = 2
        n_items = gl.load(prefix_ptr + batch) * kv_heads
        step = gl.num_programs(0)
        pid = gl.program_id(0)
        k_ring = gl.allocate_shared_memory(k_desc.block_type.element_ty, [STAGES, BLOCK_N, HEAD], k_desc.layout)
        v_ring = gl.allocate_shared_memory(v_desc.block_type.element_ty, [STAGES, BLOCK_N, HEAD], v_desc.layout)
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for ring_slot in gl.static_range(STAGES):
            mbarrier.init(bars.index(ring_slot), count=1)
        q_smem = gl.allocate_shared_memory(q_ptr.dtype.element_ty, [BLOCK_M, HEAD], Q_LAYOUT)

        q_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
        s_layout: gl.constexpr = _mma_layout(BLOCK_N, num_warps)
        o_layout: gl.constexpr = _mma_layout(HEAD, num_warps)
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        cols = gl.arange(0, HEAD, layout=gl.SliceLayout(0, q_layout))
        s_rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
        s_cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)

        b, kv_head, q_start, q_len, kv_len, m_start, n_chunks = _work_item(
            pid, n_items, kv_heads, prefix_ptr, map_ptr, cu_ptr, cu_k_ptr, used_ptr, tile_tokens, BLOCK_N, CAUSAL,
            USED)
        if pid < n_items:
            blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, 0, BLOCK_N, BOX, PAGE, num_warps)
            _issue_chunk(k_desc, v_desc, k_ring, v_ring, k_desc, v_desc, k_ring, v_ring, bars, blocks, kv_len,
                         kv_head * HEAD, 0, 0, BLOCK_N, BOX, PAGE, HEAD, 0, num_warps)
        g = pid * 0  # chunks consumed so far: ring slot g % 2, barrier phase (g // 2) & 1
        for item in range(pid, n_items, step):
            nxt = item + step
            token, head, rows_ok = _tile_rows(q_layout, BLOCK_M, m_start, group, tile_tokens, q_start, q_len, kv_head)
            q = gl.load(q_ptr + (token * sq_t + head * sq_h)[:, None] + cols[None, :], mask=rows_ok[:, None], other=0.0)
            nb, n_head, nq_start, nq_len, nkv_len, nm_start, nn_chunks = _work_item(
                nxt, n_items, kv_heads, prefix_ptr, map_ptr, cu_ptr, cu_k_ptr, used_ptr, tile_tokens, BLOCK_N,
                CAUSAL, USED)
            _cta_sync()  # every warp is past the last item's MMAs on q_smem
            q_smem.store(q)
            fence_async_shared()
            _cta_sync()
            s_last = m_start + s_rows // group + kv_len - q_len  # the last key each row sees (causal)
            m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
            l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
            acc = gl.zeros([BLOCK_M, HEAD], gl.float32, layout=o_layout)
            for chunk in range(n_chunks):
                if num_warps > 4:  # by every warpgroup: the other one may still be reading the slot refilled now
                    _cta_sync()
                # the stream's next chunk into the slot the previous one freed: this item's, or the next item's first
                if chunk + 1 < n_chunks:
                    blocks = _chunk_blocks(bt_ptr, b, s_bt, kv_len, chunk + 1, BLOCK_N, BOX, PAGE, num_warps)
                    _issue_chunk(k_desc, v_desc, k_ring, v_ring, k_desc, v_desc, k_ring, v_ring, bars, blocks,
                                 kv_len, kv_head * HEAD, chunk + 1, (g + 1) % STAGES, BLOCK_N, BOX, PAGE, HEAD, 0,
                                 num_warps)
                elif nxt < n_items:
                    blocks = _chunk_blocks(bt_ptr, nb, s_bt, nkv_len, 0, BLOCK_N, BOX, PAGE, num_warps)
                    _issue_chunk(k_desc, v_desc, k_ring, v_ring, k_desc, v_desc, k_ring, v_ring, bars, blocks,
                                 nkv_len, n_head * HEAD, 0, (g + 1) % STAGES, BLOCK_N, BOX, PAGE, HEAD, 0, num_warps)
                slot = g % STAGES
                mbarrier.wait(bars.index(slot), (g // STAGES) & 1)
                s = warpgroup_mma(q_smem, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
                s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
                p, alpha, m_i, l_i, rescale = _online_softmax(s, chunk * BLOCK_N + s_cols, s_last, kv_len, qk_scale,
                                                              m_i, l_i, CAUSAL)
                acc = _rescaled(acc, alpha, rescale, o_layout, False)
                acc = _issue_pv(acc, p, v_ring.index(slot), chunk, kv_len, BLOCK_N, p_layout, num_warps)
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
                g += 1
            l_o = gl.convert_layout(gl.where(l_i == 0.0, 1.0, l_i), gl.SliceLayout(1, o_layout))
            # to Q's blocked layout through q_smem, free now (a layout conversion would take its own shared
            # memory for the whole run: 8 KB more, one program fewer an SM)
            _cta_sync()
            q_smem.store((acc / l_o[:, None]).to(q.dtype))
            _cta_sync()
            o = q_smem.load(q_layout)
            gl.store(out_ptr + (token * so_t + head * so_h)[:, None] + cols[None, :], o, mask=rows_ok[:, None])
            b, kv_head, q_start, q_len, kv_len, m_start, n_chunks = nb, n_head, nq_start, nq_len, nkv_len, nm_start, \
                nn_chunks
        for ring_slot in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(ring_slot))


def _stride_unit(element_size: int, *strides: int) -> int:
    """The largest power-of-two element count, at most 16 bytes, that divides every row and head stride.

    Triton proves an integer argument's divisibility only by 16 (elements here), so a head size of 72 (row
    strides 72·H) compiles to 2-byte scalar loads; strides passed as multiples of this unit, multiplied back by a
    constant in the kernel, keep 16-byte vectors (72 = 9·8: bf16 rows stay 16-byte aligned)."""
    unit = max(1, 16 // element_size)
    while unit > 1 and any(s % unit for s in strides):
        unit //= 2
    return unit


def _register_cap(maxnreg: int, block_d: int) -> dict[str, int]:
    """The launch option that caps registers per thread; heads wider than 128 keep the compiler's own count (at
    head 256 ptxas needs 158 or more and refuses 128)."""
    return {"maxnreg": maxnreg} if maxnreg and block_d <= 128 else {}


def _kv_descriptors(k, v, tiles: dict, block_n: int, block_d: int, head_dim: int, paged: bool) -> dict:
    """With TMA: descriptors over K and V as [tokens, kv_heads * head] for the unmasked chunks (a head that is its
    own power of two, 16-byte rows); a paged cache [blocks, page, kv_heads, head] is viewed as [blocks * page,
    kv_heads * head] when a chunk fits its blocks (page a multiple of BLOCK_N) and its slots and heads are packed;
    otherwise nothing (the pointer loads)."""
    if not tiles.get("TMA") or head_dim != block_d or (paged and k.shape[1] % block_n):
        return {}
    views = []
    for t in (k, v):
        if paged:
            blocks, page, heads, dim = t.shape
            tokens, row_stride = blocks * page, t.stride(1)
            if t.stride(0) != page * row_stride or t.stride(2) != dim:
                return {}
        else:
            (tokens, heads, dim), row_stride = t.shape, t.stride(0)
            if t.stride(1) != dim:
                return {}
        if t.stride(-1) != 1 or (row_stride * t.element_size()) % 16 or t.data_ptr() % 16:
            return {}
        views.append(TensorDescriptor(t, [tokens, heads * dim], [row_stride, 1], [block_n, block_d]))
    return {"k_desc": views[0], "v_desc": views[1], "TMA": True, "WS": bool(tiles.get("WARP_SPECIALIZE", 0)),
            "TMA_TAIL": bool(tiles.get("TMA_TAIL", 0))}


def _head_parts(head_dim: int, split: bool) -> tuple[int, int]:
    """(BLOCK_D, BLOCK_D2): the head padded to one power of two (BLOCK_D2 0), or with `split` a power of two
    below it plus the rest padded to a power of two (at least 16, the MMA's K step) where that is narrower:
    72 -> 64 + 16, 80 -> 64 + 16, 96 -> 64 + 32, 192 -> 128 + 64, 40 -> 32 + 16 (24 stays 32: no narrower)."""
    full = max(16, _next_pow2(head_dim))
    if not split or head_dim == full or head_dim <= 16:
        return full, 0
    main = full // 2
    rest = max(16, _next_pow2(head_dim - main))
    return (main, rest) if main + rest < full else (full, 0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _workload_tiles(total: int, batch: int, block_d: int, group: int = 1, kv_heads: int = 1,
                    sms: int = 132) -> dict[str, int]:
    """AUTO's tiles, from host-known sizes only (no device read). Measured on an H200, bf16, 16-slot pages:
    256-token batches 1.27x faster than the explicit defaults (and 1.07x more with V loaded beside K, 1.06x
    more with 128 registers a thread: 4 programs an SM instead of 3; wider heads do not compile in 128), one
    24752-token sequence (head 80) 1.22x, one 6000-token sequence (head 256, 8 heads over 1) 1.60x; a short
    workload whose small tiles would not give every SM a program takes the long tiles, 64 rows where 128-row
    ones would leave SMs idle (875 tokens, 16 heads over 2, head 256: 1.40x over the small tiles)."""
    def programs(rows: int) -> int:  # grid size with GQA packed into `rows`-row tiles
        packed = 1 < group <= rows
        return (_cdiv(total, rows // group if packed else rows) + batch) * (kv_heads if packed else kv_heads * group)

    # small tiles win by holding several programs an SM (4 at 128 registers) to hide their latencies: a grid
    # with fewer than that per SM gains nothing from them
    if total <= SHORT_TOKENS * batch and programs(64) >= 4 * sms:
        # GQA groups packed into 128 rows at 8 warps (two warpgroups sharing each K/V chunk): 1.05x over 64 rows
        # at 4 warps (300 and 3000 sequences of 256 tokens, 16 heads over 4, head 128); MHA rows and heads
        # wider than 128 keep the 64-row tiles
        wide = 1 < group <= 128 and block_d <= 128
        # no TMA: without pipelining stages a descriptor load's latency is exposed (H200, in the suite: 1024- and
        # 512-token batches 13% and 12% slower with it)
        return {"BLOCK_M": 128 if wide else 64, "BLOCK_N": 32, "TILE_MAP": 1, "PACK_GQA": 1, "KV_AHEAD": 1,
                "num_warps": 8 if wide else 4, "num_stages": 1, "MAXNREG": 128, "TMA": 0}
    return {"BLOCK_M": 128 if programs(128) >= sms else 64, "BLOCK_N": 128 if block_d <= 128 else 64, "TILE_MAP": 0,
            "PACK_GQA": 1, "KV_AHEAD": 0, "MAXNREG": 0, "num_warps": 8, "num_stages": 2}


_PROPS: dict[int, object] = {}


def _properties(device: torch.device):
    """A CUDA device's properties (cached: the query costs microseconds a call)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _PROPS:
        _PROPS[index] = torch.cuda.get_device_properties(index)
    return _PROPS[index]


def _sm_count(device: torch.device) -> int:
    """Multiprocessors of a CUDA device; 1 elsewhere."""
    return _properties(device).multi_processor_count if device.type == "cuda" else 1


def _gluon_workload_tiles(total: int, batch: int, group: int, kv_heads: int, head_dim: int, tiles: dict,
                          sms: int) -> dict[str, int]:
    """AUTO's changes to the Gluon tunables, from host-known sizes: the copy warp (GLUON_WS) with 64-key chunks
    where each tile's keys are a long stream (STREAM_TOKENS or more query tokens per sequence on average; causal
    tiles see up to their sequence's length) or the grid has no more programs than the copy warp's form keeps on
    the SMs at once (2 an SM: its occupancy cost is then nothing) and sequences of two 64-key chunks or more.
    Elsewhere ({}) the 4-programs-an-SM form stays. H100, CUDA-graph replays against the explicit form (32-key
    chunks, no copy warp): single sequences of 875, 1144, 2018, 5926 (head 256) and 6294 tokens 1.56x, 1.58x,
    1.35x, 1.11x, 1.17x; 145 tokens (112 programs) 1.09x; batches of 4 x 4096, 16 x 1024 and 8 x 600 tokens
    1.21x, 1.07x, 1.05x; split heads (a sequence each of 1688 tokens at head 192, 11840 and 49152 at 72, 24752
    at 80) 1.13x, 1.12x, 1.11x, 1.20x; but sequences of 7, 16 and 72 tokens (one or two chunks) 0.79-0.88x, and
    batches of 256-token sequences (130-2056 of them) 0.76-0.80x. The OVERLAP, LAZY and persistent forms have no
    copy-warp form."""
    if tiles.get("GLUON_OVERLAP", 0) or tiles.get("GLUON_LAZY", 0) or tiles.get("GLUON_PERSIST", 0):
        return {}
    if not _gluon_head_parts(head_dim, tiles)[0] or batch <= 0:  # a head the Gluon kernel does not take
        return {}
    tile_tokens = max(1, 16 * tiles.get("GLUON_WARPS", 4) // group)
    programs = (_cdiv(total, tile_tokens) + batch) * kv_heads
    few = programs <= 2 * sms and total >= 2 * 64 * batch  # and a tile's keys at least two 64-key chunks
    if total >= STREAM_TOKENS * batch or few:
        return {"GLUON_WS": 1, "GLUON_BLOCK_N": 64, "GLUON_STAGES": 2}
    return {}


def _gluon_fits(q, k, v, block_table, group: int, head_dim: int, tiles: dict) -> bool:
    """Whether the Gluon kernel takes this call: asked for (GLUON), a Hopper GPU (warpgroup MMAs) and the layouts
    `_gluon_layout_fits` accepts."""
    if not (HAS_GLUON and tiles.get("GLUON", 0) and block_table is not None and q.is_cuda):
        return False
    return _gluon_layout_fits(q, k, v, block_table, group, head_dim, tiles) and _properties(q.device).major == 9


def _gluon_head_parts(head_dim: int, tiles: dict) -> tuple[int, int]:
    """(HEAD, HEAD2) of the Gluon kernel: a power-of-two head whole (HEAD2 0); with GLUON_SPLIT (and SPLIT_HEAD)
    another head as `_head_parts` splits it, where both parts are MMA widths of 16-128 and no persistent or
    OVERLAP form is asked for (they have no second part); (0, 0) where the kernel does not take the head."""
    if head_dim == _next_pow2(head_dim):
        return (head_dim, 0) if 16 <= head_dim <= 256 else (0, 0)
    if not (tiles.get("GLUON_SPLIT", 0) and tiles.get("SPLIT_HEAD", 0)) or tiles.get("GLUON_PERSIST", 0) \
            or tiles.get("GLUON_OVERLAP", 0):
        return 0, 0
    main, rest = _head_parts(head_dim, True)
    return (main, rest) if rest and 16 <= rest and main <= 128 else (0, 0)


def _gluon_block_n(head_dim: int, tiles: dict) -> int:
    """The Gluon kernel's key chunk: GLUON_BLOCK_N, or GLUON_SPLIT_BLOCK_N for a split head of at most 128 MMA
    columns (H100, do_bench, 2026-12-06: 64-key chunks 1.08-1.13x over 32 on single sequences of 11840-49152
    tokens at heads 72 and 80; at head 192, 128 + 64 columns, 32-key chunks stay faster)."""
    head, head2 = _gluon_head_parts(head_dim, tiles)
    if head2 and head + head2 <= 128:
        return tiles.get("GLUON_SPLIT_BLOCK_N", 64)
    return tiles.get("GLUON_BLOCK_N", 32)


def _gluon_layout_fits(q, k, v, block_table, group: int, head_dim: int, tiles: dict) -> bool:
    """16-bit values, a head `_gluon_head_parts` takes (a power of two of 16-256; with GLUON_SPLIT a head split
    into two power-of-two parts), a GQA group within a tile's rows (16 per warp), and a packed paged cache whose
    pages are whole boxes of a chunk (a power of two below it, or a multiple of it) at 16-byte aligned addresses
    and rows, with a block table of unit column stride."""
    if q.dtype not in (torch.bfloat16, torch.float16) or k.dtype != q.dtype or v.dtype != q.dtype:
        return False
    if not _gluon_head_parts(head_dim, tiles)[0] or q.stride(-1) != 1:
        return False
    if (k.shape[2] * head_dim * k.element_size()) % 16:  # a TMA descriptor's rows: 16-byte multiples
        return False
    block_n, warps = _gluon_block_n(head_dim, tiles), tiles.get("GLUON_WARPS", 4)
    page = k.shape[1]
    box = min(page, block_n)
    if group > 16 * warps or page < 8 or page % box or block_n % box or block_table.stride(-1) != 1:
        return False
    return all(t.is_contiguous() and t.data_ptr() % 16 == 0 for t in (k, v))


@functools.lru_cache(maxsize=64)
def _shared_layout(rows: int, cols: int, dtype):
    """The MMA-ready shared-memory layout of a [rows, cols] tile (cached: Gluon builds it in ~10 us a call)."""
    return gl.NVMMASharedLayout.get_default_for([rows, cols], dtype)


def _launch_gluon(q, k, v, out, cu_seqlens, cu_k, seqused_k, block_table, group: int, softmax_scale: float,
                  causal: bool, tiles: dict) -> torch.Tensor:
    """The paged cache [blocks, page, kv_heads, head] through the Gluon kernel (see `_gluon_fits`)."""
    total, _, dim = q.shape
    batch = cu_seqlens.shape[0] - 1
    kv_heads = k.shape[2]
    block_n, warps = _gluon_block_n(dim, tiles), tiles.get("GLUON_WARPS", 4)
    overlap = bool(tiles.get("GLUON_OVERLAP", 0))
    stages = max(tiles.get("GLUON_STAGES", 2), 3 if overlap else 2)
    block_m = 16 * warps
    page = k.shape[1]
    box = min(page, block_n)
    dtype = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    head, head2 = _gluon_head_parts(dim, tiles)
    q_layout, kv_layout = _shared_layout(block_m, head, dtype), _shared_layout(box, head, dtype)
    k_desc, v_desc = (GluonTensorDescriptor(t.view(-1, kv_heads * dim), [t.shape[0] * page, kv_heads * dim],
                                            [kv_heads * dim, 1], [box, head], kv_layout) for t in (k, v))
    q2_layout, k2_desc, v2_desc = q_layout, None, None  # never read without a split (None: no kernel parameter)
    if head2:
        q2_layout, kv2_layout = _shared_layout(block_m, head2, dtype), _shared_layout(box, head2, dtype)
        k2_desc, v2_desc = (GluonTensorDescriptor(t.view(-1, kv_heads * dim), [t.shape[0] * page, kv_heads * dim],
                                                  [kv_heads * dim, 1], [box, head2], kv2_layout) for t in (k, v))
    tile_tokens = block_m // group
    grid = (_cdiv(total, tile_tokens) + batch, kv_heads)
    persist = tiles.get("GLUON_PERSIST", 0)
    part_chunks = tiles.get("GLUON_PART_CHUNKS", 0)
    # one sequence: the kernel counts its tiles itself, one launch instead of two (the prefix kernel's few
    # microseconds are much of a short sequence's time); the persistent and split-key forms read the prefix
    one_seq = batch == 1 and not persist and not part_chunks
    if one_seq:
        prefix = tile_map = cu_seqlens  # valid pointers, never read
    else:
        prefix = torch.empty(batch + 1, dtype=torch.int32, device=q.device)
        tile_map = torch.empty(grid[0], dtype=torch.int32, device=q.device)
        _tile_prefix_map_kernel[(batch,)](cu_seqlens, prefix, tile_map, tile_tokens, CHUNK=1024, MAP_CHUNK=256,
                                          num_warps=4)
    regs = _register_cap(tiles.get("GLUON_MAXNREG", 0), head + head2)
    ws = bool(tiles.get("GLUON_WS", 0)) and not (overlap or tiles.get("GLUON_LAZY", 0))
    n_parts, parts = 1, {}
    if part_chunks and not (overlap or ws or persist):  # split keys: parts of up to part_chunks chunks, at most n_parts a tile
        n_parts = _cdiv(_cdiv(block_table.shape[1] * page, block_n), part_chunks)  # the table bounds a key length
    if n_parts > 1:
        heads = q.shape[1]
        parts = {"part_acc_ptr": torch.empty((n_parts, total, heads, dim), dtype=torch.float32, device=q.device),
                 "part_m_ptr": torch.empty((n_parts, total, heads), dtype=torch.float32, device=q.device),
                 "part_l_ptr": torch.empty((n_parts, total, heads), dtype=torch.float32, device=q.device),
                 "part_stride": total * heads, "n_heads": heads, "PART_CHUNKS": part_chunks}
    if persist:  # programs: GLUON_PERSIST an SM, or GLUON_PROGRAMS (a test's way to make every program loop)
        programs = tiles.get("GLUON_PROGRAMS") or min(grid[0] * kv_heads, persist * _sm_count(q.device))
        _paged_attention_gluon_persistent_kernel[(programs,)](
            q, out, k_desc, v_desc, block_table, cu_seqlens, cu_k,
            seqused_k if seqused_k is not None else cu_k, prefix, tile_map,
            batch, group, kv_heads, tile_tokens, softmax_scale * LOG2E, block_table.stride(0), q.stride(0),
            q.stride(1), out.stride(0), out.stride(1),
            Q_LAYOUT=q_layout, BLOCK_M=block_m, BLOCK_N=block_n, HEAD=dim, BOX=box, PAGE=page,
            CAUSAL=bool(causal), USED=seqused_k is not None, num_warps=warps, **regs)
        return out
    _paged_attention_gluon_kernel[grid + ((n_parts,) if parts else ())](
        q, out, k_desc, v_desc, k2_desc, v2_desc, block_table, cu_seqlens, cu_k,
        seqused_k if seqused_k is not None else cu_k, prefix, tile_map,
        batch, group, tile_tokens, softmax_scale * LOG2E, block_table.stride(0), q.stride(0), q.stride(1),
        out.stride(0), out.stride(1),
        Q_LAYOUT=q_layout, Q2_LAYOUT=q2_layout, BLOCK_M=block_m, BLOCK_N=block_n,
        HEAD=head, HEAD2=head2, DIM=dim, BOX=box, PAGE=page, STAGES=stages, CAUSAL=bool(causal),
        USED=seqused_k is not None,
        OVERLAP=overlap, BT_AHEAD=bool(tiles.get("GLUON_BT_AHEAD", 0)), FULL=bool(tiles.get("GLUON_FULL", 0)),
        LAZY=bool(tiles.get("GLUON_LAZY", 0)), WS=ws, WS_REGS=24, ONE_SEQ=one_seq, num_warps=warps, **parts,
        **regs)
    if parts:
        _parts_combine_kernel[grid](
            out, parts["part_acc_ptr"], parts["part_m_ptr"], parts["part_l_ptr"], cu_seqlens, cu_k,
            seqused_k if seqused_k is not None else cu_k, prefix, tile_map, batch, group, tile_tokens, parts["n_heads"],
            parts["part_stride"], out.stride(0), out.stride(1), BLOCK_M=block_m, BLOCK_D=_next_pow2(dim), DIM=dim,
            BLOCK_N=block_n, PART_CHUNKS=part_chunks, CAUSAL=bool(causal), USED=seqused_k is not None, num_warps=4)
    return out


def launch_attention_prefill_varlen(q, k, v, cu_seqlens, num_heads, num_kv_heads, softmax_scale, causal=True,
                                    cu_seqlens_k=None, seqused_k=None, block_table=None):
    total, _, head_dim = q.shape
    batch = cu_seqlens.shape[0] - 1
    out = torch.empty_like(q)
    if total == 0 or batch <= 0:
        return out
    block_d = max(16, _next_pow2(head_dim))
    group = num_heads // num_kv_heads
    tiles = TUNABLES
    if TUNABLES.get("AUTO", 0):
        tiles = {**TUNABLES, **_workload_tiles(total, batch, block_d, group, num_kv_heads, _sm_count(q.device))}
    block_d, block_d2 = _head_parts(head_dim, bool(tiles.get("SPLIT_HEAD", 0)))
    if block_d2:  # the split has no TMA or look-ahead form
        tiles = {**tiles, "TMA": 0, "KV_AHEAD": min(tiles.get("KV_AHEAD", 0), 1)}
    bm, bn = tiles["BLOCK_M"], tiles["BLOCK_N"]
    paged = block_table is not None
    cu_k = cu_seqlens_k if cu_seqlens_k is not None else cu_seqlens
    # a paged cache the Triton kernel would gather slot by slot (no TMA box holds its chunks) goes to Gluon's
    # per-page copies where the GPU and the shapes allow
    kb_tma = tiles.get("TMA") and head_dim == block_d and not block_d2 and paged and k.shape[1] % bn == 0
    if paged and not kb_tma and _gluon_fits(q, k, v, block_table, group, head_dim, tiles):
        if TUNABLES.get("AUTO", 0):
            extra = _gluon_workload_tiles(total, batch, group, k.shape[2], head_dim, tiles, _sm_count(q.device))
            # the GPU and the head were checked above; only the chunk's fit with the pages can change
            if extra and _gluon_layout_fits(q, k, v, block_table, group, head_dim, {**tiles, **extra}):
                tiles = {**tiles, **extra}
        return _launch_gluon(q, k, v, out, cu_seqlens, cu_k, seqused_k, block_table, group, softmax_scale, causal,
                             tiles)
    prefix = torch.empty(batch + 1, dtype=torch.int32, device=q.device)
    pack = bool(tiles.get("PACK_GQA", 0)) and 1 < group <= bm
    tile_tokens = bm // group if pack else bm
    if paged:
        sk_b, sk_t, sk_h, sk_d = k.stride()
        sv_b, sv_t, sv_h, sv_d = v.stride()
        page, s_bt = k.shape[1], block_table.stride(0)
    else:
        (sk_t, sk_h, sk_d), (sv_t, sv_h, sv_d) = k.stride(), v.stride()
        sk_b = sv_b = 0
        page, s_bt = 1, 0
    (sq_t, sq_h, sq_d), (so_t, so_h, so_d) = q.stride(), out.stride()
    u = _stride_unit(q.element_size(), sq_t, sq_h, so_t, so_h, sk_b, sk_t, sk_h, sv_b, sv_t, sv_h)
    grid = (_cdiv(total, tile_tokens) + batch, num_kv_heads if pack else num_heads)
    tile_map = batch > 1 and bool(tiles["TILE_MAP"])
    seq_of_tile = prefix
    if tile_map:
        seq_of_tile = torch.empty(grid[0], dtype=torch.int32, device=q.device)
        _tile_prefix_map_kernel[(batch,)](cu_seqlens, prefix, seq_of_tile, tile_tokens, CHUNK=1024, MAP_CHUNK=256,
                                          num_warps=4)
    else:
        _tile_prefix_kernel[(1,)](cu_seqlens, prefix, batch, tile_tokens, CHUNK=1024, num_warps=4)
    descriptors = _kv_descriptors(k, v, tiles, bn, block_d, head_dim, paged)
    _attention_prefill_varlen_kernel[grid](
        q, k, v, cu_seqlens, cu_k, seqused_k if seqused_k is not None else cu_k,
        block_table if paged else cu_k, prefix, seq_of_tile, out,
        batch, group, tile_tokens, softmax_scale * LOG2E, page, s_bt,
        sq_t // u, sq_h // u, sq_d, sk_b // u, sk_t // u, sk_h // u, sk_d, sv_b // u, sv_t // u, sv_h // u, sv_d,
        so_t // u, so_h // u, so_d,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=block_d, HEAD_DIM=head_dim, SPLIT=block_d2 > 0, BLOCK_D2=block_d2 or 16,
        SEARCH=max(1, (batch - 1).bit_length()),
        CAUSAL=bool(causal), PAGED=paged, USED=seqused_k is not None, UNIT=u, TILE_MAP=tile_map, PACK_GQA=pack,
        KV_AHEAD=tiles.get("KV_AHEAD", 0), **descriptors,
        BT_AHEAD=paged and bool(tiles.get("BT_AHEAD", 0)) and tiles.get("KV_AHEAD", 0) != 2 and not descriptors,
        LAZY=bool(tiles.get("LAZY", 0)),
        num_warps=tiles["num_warps"], **_register_cap(tiles.get("MAXNREG", 0), block_d + block_d2),
        num_stages=_cap_stages(tiles["num_stages"], 2 * bn * (block_d + block_d2) * q.element_size(),
                               bm * (block_d + block_d2) * q.element_size()),
    )
    return out


class Model(nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, softmax_scale: float | None = None,
                 causal: bool = True):
        super().__init__()
        assert num_heads % num_kv_heads == 0
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else head_dim ** -0.5
        self.causal = bool(causal)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor,
                cu_seqlens_k: torch.Tensor | None = None, seqused_k: torch.Tensor | None = None,
                block_table: torch.Tensor | None = None) -> torch.Tensor:
        return launch_attention_prefill_varlen(q, k, v, cu_seqlens, self.num_heads, self.num_kv_heads,
                                               self.softmax_scale, self.causal, cu_seqlens_k, seqused_k,
                                               block_table)
