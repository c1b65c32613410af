"""Reference Triton kernels: MoE align + sort (expert-grouped, block-padded token schedule).

Deterministic three-kernel counting sort, no atomics:
  1. _moe_align_count_kernel  (grid: one program per chunk of the n = T*k flat ids; a chunk is at most
     CHUNK ids, fewer when that gives about TARGET_PROGRAMS programs) counts the ids of
     its chunk per expert with a one-hot [SUB, BLOCK_E] compare-and-sum, writes counts[chunk, e]; it
     also fills its share of sorted_token_ids with the sentinel n.
  2. _moe_align_scan_kernel   (one program) sums the counts per expert, pads them to block_size, takes
     the exclusive prefix over experts (padded starts) and an exclusive prefix over chunks per expert
     (SCAN_CHUNKS rows of the count matrix per step, tl.cumsum along the chunk axis), overwriting counts
     with each (chunk, expert) write offset; stores the cumulative block ends and num_tokens_post_padded.
  3. _moe_align_sort_kernel   (one program per chunk) ranks each id among equal ids of its chunk with an
     inclusive cumsum of the one-hot matrix and scatters the flat index to offset + rank; a stable,
     canonical order (increasing flat index within an expert). The same programs write expert_ids by
     counting, per block, the experts whose cumulative block end is <= the block index.

Ids outside [0, num_experts) (expert parallelism's -1 for a non-local expert) are dropped: counted for no
expert, their flat index written nowhere. Two output conventions (Model(exact_sizes=...)):
  - static (default): worst-case buffers, sorted_token_ids [max_padded_len] with the unused tail at the
    sentinel and expert_ids -1 past the used blocks; no host synchronisation (vLLM's convention);
  - exact_sizes=True: the same buffers sliced (views) to num_tokens_post_padded and its block count, the
    sizes of a reference that concatenates per-expert groups; one host read of num_tokens_post_padded.
with_counts=True adds two outputs that the scan kernel writes: each expert's id count (int32 [E], unpadded)
and their offsets (int32 [E + 1], 0 first, the total last). With block_size 1 and exact_sizes the outputs are
a plain stable counting sort of the ids by expert: order, expert of each position, total, counts, offsets.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"CHUNK": 1024, "SUB": 64, "SCAN_CHUNKS": 16, "BLOCK_B": 128, "num_warps": 4}
SEARCH_SPACE = {
    "CHUNK": [256, 512, 1024, 2048, 4096],
    "SUB": [16, 32, 64, 128],
    "SCAN_CHUNKS": [1, 4, 16, 32],
    "BLOCK_B": [32, 64, 128, 256],
    "num_warps": [1, 2, 4, 8],
}


# Programs aimed for: a chunk is the smallest power of two (at least SUB, at most CHUNK) that keeps the count and
# sort kernels at about this many programs, so a decode batch's few hundred ids are not left to one program
# walking CHUNK / SUB steps (the fused MoE kernel's routing, the same sort, spent 65 us of a 563 us call on an
# H200 that way, 2026-12-03).
TARGET_PROGRAMS = 128


def max_padded_len(num_pairs: int, num_experts: int, block_size: int) -> int:
    bound = num_pairs + min(num_experts, num_pairs) * (block_size - 1)
    return (bound + block_size - 1) // block_size * block_size


@triton.jit
def _moe_align_count_kernel(ids_ptr, counts_ptr, sorted_ptr, n, n_experts, length, fill_per_prog,
                            CHUNK: tl.constexpr, SUB: tl.constexpr, BLOCK_E: tl.constexpr):
    c = tl.program_id(0)
    experts = tl.arange(0, BLOCK_E)
    cnt = tl.zeros([BLOCK_E], dtype=tl.int32)
    for s in range(0, CHUNK, SUB):
        idx = c * CHUNK + s + tl.arange(0, SUB)
        e = tl.load(ids_ptr + idx, mask=idx < n, other=-1).to(tl.int32)
        cnt += tl.sum((e[:, None] == experts[None, :]).to(tl.int32), axis=0)
    tl.store(counts_ptr + c * n_experts + experts, cnt, mask=experts < n_experts)
    # sentinel fill of this program's slice of the output (the scatter overwrites the real slots later)
    lo = c * fill_per_prog
    hi = tl.minimum(lo + fill_per_prog, length)
    for p in range(lo, hi, SUB):
        pos = p + tl.arange(0, SUB)
        tl.store(sorted_ptr + pos, tl.zeros([SUB], dtype=tl.int32) + n, mask=pos < hi)


@triton.jit
def _moe_align_scan_kernel(counts_ptr, block_end_ptr, num_post_ptr, totals_ptr, n_chunks, n_experts, block_size,
                           SCAN_CHUNKS: tl.constexpr, BLOCK_E: tl.constexpr, STORE_TOTALS: tl.constexpr):
    experts = tl.arange(0, BLOCK_E)
    e_ok = experts < n_experts
    crow = tl.arange(0, SCAN_CHUNKS)
    total = tl.zeros([BLOCK_E], dtype=tl.int32)
    for c0 in range(0, n_chunks, SCAN_CHUNKS):
        rows = c0 + crow
        m = (rows < n_chunks)[:, None] & e_ok[None, :]
        tile = tl.load(counts_ptr + rows[:, None] * n_experts + experts[None, :], mask=m, other=0)
        total += tl.sum(tile, axis=0)
    if STORE_TOTALS:  # [counts (E) | offsets (E + 1)]
        tl.store(totals_ptr + experts, total, mask=e_ok)
        tl.store(totals_ptr + n_experts + 1 + experts, tl.cumsum(total, axis=0), mask=e_ok)
        tl.store(totals_ptr + n_experts, 0)
    padded = (total + block_size - 1) // block_size * block_size
    incl = tl.cumsum(padded, axis=0)
    tl.store(block_end_ptr + experts, incl // block_size, mask=e_ok)
    tl.store(num_post_ptr, tl.sum(padded, axis=0))
    run = incl - padded                                   # padded start of each expert
    for c0 in range(0, n_chunks, SCAN_CHUNKS):
        rows = c0 + crow
        m = (rows < n_chunks)[:, None] & e_ok[None, :]
        ptrs = counts_ptr + rows[:, None] * n_experts + experts[None, :]
        tile = tl.load(ptrs, mask=m, other=0)
        excl = tl.cumsum(tile, axis=0) - tile             # earlier chunks of this tile
        tl.store(ptrs, run[None, :] + excl, mask=m)       # counts -> write offsets, in place
        run += tl.sum(tile, axis=0)


@triton.jit
def _moe_align_sort_kernel(ids_ptr, offsets_ptr, block_end_ptr, sorted_ptr, expert_ids_ptr, n, n_experts,
                           n_blocks, blocks_per_prog, CHUNK: tl.constexpr, SUB: tl.constexpr,
                           BLOCK_E: tl.constexpr, BLOCK_B: tl.constexpr):
    c = tl.program_id(0)
    experts = tl.arange(0, BLOCK_E)
    e_ok = experts < n_experts
    run = tl.load(offsets_ptr + c * n_experts + experts, mask=e_ok, other=0)
    for s in range(0, CHUNK, SUB):
        idx = c * CHUNK + s + tl.arange(0, SUB)
        ok = idx < n
        e = tl.load(ids_ptr + idx, mask=ok, other=-1).to(tl.int32)
        onehot = (e[:, None] == experts[None, :]).to(tl.int32)         # [SUB, BLOCK_E]
        rank = tl.sum(onehot * tl.cumsum(onehot, axis=0), axis=1) - 1  # earlier equal ids in this step
        dest = tl.sum(onehot * run[None, :], axis=1) + rank
        # an id outside [0, n_experts) (expert parallelism's -1) belongs to no expert: dropped
        tl.store(sorted_ptr + dest, idx, mask=ok & (e >= 0) & (e < n_experts))
        run += tl.sum(onehot, axis=0)
    # expert id of each block: number of experts whose cumulative block end is <= b (searchsorted right)
    bend = tl.load(block_end_ptr + experts, mask=e_ok, other=2147483647)
    lo = c * blocks_per_prog
    hi = tl.minimum(lo + blocks_per_prog, n_blocks)
    for b0 in range(lo, hi, BLOCK_B):
        b = b0 + tl.arange(0, BLOCK_B)
        owner = tl.sum((bend[None, :] <= b[:, None]).to(tl.int32), axis=1)
        tl.store(expert_ids_ptr + b, tl.where(owner < n_experts, owner, -1), mask=b < hi)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def launch_moe_align_sort(topk_ids: torch.Tensor, num_experts: int, block_size: int, cfg: dict = TUNABLES,
                          exact_sizes: bool = False, with_counts: bool = False):
    flat = topk_ids.reshape(-1)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    dev = topk_ids.device
    n = flat.numel()
    length = max_padded_len(n, num_experts, block_size)
    n_blocks = length // block_size
    sub = cfg["SUB"]
    chunk = min(cfg["CHUNK"], max(sub, _next_pow2(_cdiv(n, TARGET_PROGRAMS))))
    n_chunks = max(1, _cdiv(n, chunk))
    block_e = _next_pow2(num_experts)
    nw = cfg["num_warps"]

    sorted_ids = torch.empty((length,), dtype=torch.int32, device=dev)
    expert_ids = torch.empty((n_blocks,), dtype=torch.int32, device=dev)
    num_post = torch.empty((1,), dtype=torch.int32, device=dev)
    counts = torch.empty((n_chunks, num_experts), dtype=torch.int32, device=dev)
    block_end = torch.empty((num_experts,), dtype=torch.int32, device=dev)
    totals = torch.empty((2 * num_experts + 1 if with_counts else 1,), dtype=torch.int32, device=dev)

    _moe_align_count_kernel[(n_chunks,)](flat, counts, sorted_ids, n, num_experts, length,
                                         _cdiv(length, n_chunks), CHUNK=chunk, SUB=sub,
                                         BLOCK_E=block_e, num_warps=nw)
    _moe_align_scan_kernel[(1,)](counts, block_end, num_post, totals, n_chunks, num_experts, block_size,
                                 SCAN_CHUNKS=cfg["SCAN_CHUNKS"], BLOCK_E=block_e, STORE_TOTALS=with_counts,
                                 num_warps=nw)
    _moe_align_sort_kernel[(n_chunks,)](flat, counts, block_end, sorted_ids, expert_ids, n, num_experts,
                                        n_blocks, _cdiv(n_blocks, n_chunks), CHUNK=chunk, SUB=sub,
                                        BLOCK_E=block_e, BLOCK_B=cfg["BLOCK_B"], num_warps=nw)
    extra = (totals[:num_experts], totals[num_experts:]) if with_counts else ()
    if exact_sizes:  # data-dependent sizes: one host read, then views of the static buffers
        used = int(num_post.item())
        return sorted_ids[:used], expert_ids[:used // block_size], num_post, *extra
    return sorted_ids, expert_ids, num_post, *extra


class Model(nn.Module):
    def __init__(self, num_experts: int, block_size: int, exact_sizes: bool = False, with_counts: bool = False):
        super().__init__()
        self.num_experts = int(num_experts)
        self.block_size = int(block_size)
        self.exact_sizes = bool(exact_sizes)
        self.with_counts = bool(with_counts)

    def forward(self, topk_ids: torch.Tensor):
        return launch_moe_align_sort(topk_ids, self.num_experts, self.block_size, exact_sizes=self.exact_sizes,
                                     with_counts=self.with_counts)
