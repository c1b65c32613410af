"""Reference Triton kernel for attention_paged_decode (single-query GQA attention over a paged KV cache).

Grid (batch, num_kv_heads, splits). A program serves all G = num_heads / num_kv_heads query heads of one
KV head, so every K/V byte is read once per group: Q is a [BLOCK_G, D] tile (G padded to >= 16 rows for
tl.dot, padding rows masked), and the context is walked in BLOCK_N-token chunks. Each chunk gathers its
tokens through the block table (token n -> block_tables[b, n // block_size], slot n % block_size), so
BLOCK_N is independent of the page size. Online softmax in fp32 (exp2, scale folded with log2(e)).

Tactic SPLIT_KV:
  0  split-free: one program per (sequence, KV head) covers the whole context and writes the output.
  1  split-KV (flash-decoding): the context is cut into PARTITION-token pieces, grid axis 2 runs one
     program per piece, each writes its partial (max, sum, unnormalised acc) to an fp32 workspace, and a
     second kernel (_attention_paged_decode_reduce_kernel) merges the pieces of a sequence (only the
     ceil(seq_len / PARTITION) real ones) with the usual log-sum-exp rescaling.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_N": 64, "SPLIT_KV": 1, "PARTITION": 512, "BLOCK_S": 16, "PAGE_TILES": 1, "num_warps": 4,
            "num_stages": 2, "MAXNREG": 0, "SHORT_CONTEXT": 1}
SEARCH_SPACE = {
    "BLOCK_N": [16, 32, 64, 128],
    "PAGE_TILES": [0, 1],
    "SPLIT_KV": [0, 1],
    "PARTITION": [128, 256, 512, 1024, 2048],
    "BLOCK_S": [4, 8, 16, 32],
    "num_warps": [2, 4, 8],
    "num_stages": [1, 2, 3, 4],
    "MAXNREG": [0, 96, 128],
    "SHORT_CONTEXT": [0, 1],
}
# Tunables with no effect (the offline search skips them): without SPLIT_KV there are no partitions and no
# reduce kernel.
INERT = {"PARTITION": {"SPLIT_KV": [0]}, "BLOCK_S": {"SPLIT_KV": [0]}}
# PAGE_TILES (split layout only; the other layout's rows are contiguous along the head already): a chunk is
# loaded page by page as [pages, ..., block_size, x] tiles, so the compiler sees each page's contiguous runs
# (one block id per page, broadcast) and emits 16-byte loads; per token, the gathered block id hides them and
# V loads were 2-byte scalars (sm_90 code of the split layout at BLOCK_N 64, head 128, bf16: 128 ld.global.b16
# and 129 ld.global.b32, 255 registers with 200 bytes of spills).
# MAXNREG caps the registers per thread of the attention kernel (0: the compiler's count), for more programs an SM
# where a short context leaves each program one or two chunks and the kernel waits on memory. ptxas figures for
# the split layout, head 128, bf16, 2 stages (python -m aka_tui.tuning.sm90_report, 2026-12-04): BLOCK_N 64 at 4
# warps takes 180 registers (two programs an SM); capped at 128, 40 bytes of spills; BLOCK_N 32 takes 125, and
# capped at 96 spills nothing (five programs an SM).
# SHORT_CONTEXT (on by default) is the rule H200 timings gave for that case: where each program's context fits in
# one BLOCK_N chunk (nothing for the pipeliner to overlap) and the grid has at least one program per SM, the chunk
# is halved (two pipelined chunks) and, at head sizes up to 128 with no cap set, registers are capped at 96.
# H200, 2026-12-04, saturated timer, split layout, head 128, 64-token contexts: 256 sequences x 16 KV heads
# 110.9 -> 67.4 us (BLOCK_N 32 alone 71.0); 128 x 3: 18.6 -> 13.8. Contexts of 128 tokens on 4-32 programs, and
# the suite's 2048-32768-token contexts (512-token partitions), ran 5-15% slower at BLOCK_N 32 or capped, so the
# rule leaves them alone (docs/benchmarks/2026-12-04-h200-s29/).
SHORT_CAP = 96
_SMS: dict[int, int] = {}


def _sm_count(device: torch.device) -> int:
    """The device's SM count, cached (the property lookup costs microseconds a call); 132 off CUDA."""
    if device.type != "cuda":
        return 132
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


def _chunking(block_n: int, maxnreg: int, program_ctx: int, programs: int, block_d: int,
              device: torch.device) -> tuple[int, int]:
    """(BLOCK_N, register cap) under SHORT_CONTEXT: halved chunks and a cap for one-chunk programs on a full grid."""
    if program_ctx <= block_n and block_n >= 32 and programs >= _sm_count(device):
        return block_n // 2, maxnreg or (SHORT_CAP if block_d <= 128 else 0)
    return block_n, maxnreg

LOG2E = 1.4426950408889634


def _cap_stages(requested: int, stage_bytes: int, fixed_bytes: int = 0, budget: int = 160 * 1024) -> int:
    """Software-pipelining depth capped so that the staged K/V tiles fit in shared memory (H100/H200: 228 KB
    per SM); keeps every point of the search space compilable."""
    return max(1, min(requested, (budget - fixed_bytes) // max(stage_bytes, 1)))


@triton.jit
def _page_tiles(kc_ptr, vc_ptr, bt_row, n0, n_stop, kvh, sbt_n, sk_blk, sk_s, sk_h, sk_d, sk_dx,
                sv_blk, sv_s, sv_h, sv_d, head_dim,
                BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, X: tl.constexpr, PAGE: tl.constexpr):
    """K^T [BLOCK_D, BLOCK_N] and V [BLOCK_N, BLOCK_D] of tokens n0.. from the split layout (K [blocks, kv_heads,
    D / X, PAGE, X] with each page's [PAGE, X] contiguous, V [blocks, kv_heads, D, PAGE]), loaded as whole pages:
    the block id is one value per page, broadcast over its slots, so each page's runs (PAGE * X elements of K,
    PAGE slots of V) are provably contiguous and 16-byte aligned (K's slot stride is the constant X)."""
    NB: tl.constexpr = BLOCK_N // PAGE
    DX: tl.constexpr = BLOCK_D // X
    pages = n0 // PAGE + tl.arange(0, NB)
    offs_s = tl.arange(0, PAGE)
    offs_dx = tl.arange(0, DX)
    offs_x = tl.arange(0, X)
    offs_d = tl.arange(0, BLOCK_D)
    page_ok = pages * PAGE < n_stop
    phys = tl.load(bt_row + pages * sbt_n, mask=page_ok, other=0).to(tl.int64)
    tok_ok = (pages[:, None] * PAGE + offs_s[None, :]) < n_stop                               # [NB, PAGE]
    k_ok = tok_ok[:, None, :, None] & ((offs_dx[:, None] * X + offs_x[None, :]) < head_dim)[None, :, None, :]
    k4 = tl.load(kc_ptr + (phys * sk_blk + kvh * sk_h)[:, None, None, None] + offs_dx[None, :, None, None] * sk_dx
                 + offs_s[None, None, :, None] * X + offs_x[None, None, None, :],
                 mask=k_ok, other=0.0)                                                        # [NB, DX, PAGE, X]
    kt = tl.reshape(tl.permute(k4, (1, 3, 0, 2)), (BLOCK_D, BLOCK_N))
    # V's mask is per page (uniform along its contiguous runs, so the loads stay vectors); the slots of the
    # last page past the sequence, read but not ours, are zeroed after (their p is 0, but 0 * NaN is not)
    v3 = tl.load(vc_ptr + (phys * sv_blk + kvh * sv_h)[:, None, None] + offs_d[None, :, None] * sv_d
                 + offs_s[None, None, :] * sv_s,
                 mask=page_ok[:, None, None] & (offs_d < head_dim)[None, :, None], other=0.0)  # [NB, BLOCK_D, PAGE]
    v3 = tl.where(tok_ok[:, None, :], v3, 0.0)
    vv = tl.reshape(tl.permute(v3, (0, 2, 1)), (BLOCK_N, BLOCK_D))
    return kt, vv


@triton.jit
def _attention_paged_decode_kernel(
    q_ptr, kc_ptr, vc_ptr, bt_ptr, sl_ptr, out_ptr, ws_m_ptr, ws_l_ptr, ws_acc_ptr,
    group, head_dim, block_size, qk_scale, partition, num_splits,
    sq_b, sq_h, sq_d, sk_blk, sk_s, sk_h, sk_d, sk_dx, sv_blk, sv_s, sv_h, sv_d, sbt_b, sbt_n, so_b, so_h, so_d,
    num_heads,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, SPLIT_KV: tl.constexpr,
    K_SPLIT_X: tl.constexpr, PAGE: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(sl_ptr + b)
    if SPLIT_KV:
        n_start = split * partition
        n_stop = tl.minimum(n_start + partition, seq_len)
    else:
        n_start = 0
        n_stop = seq_len

    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    offs_n0 = tl.arange(0, BLOCK_N)
    g_ok = offs_g < group
    d_ok = offs_d < head_dim
    heads = (kvh * group + offs_g).to(tl.int64)
    if K_SPLIT_X > 0:  # keys stored [blocks, kv_heads, head_dim / x, block_size, x]: d = (d // x, d % x)
        k_d = (offs_d // K_SPLIT_X) * sk_dx + (offs_d % K_SPLIT_X) * sk_d
    else:
        k_d = offs_d * sk_d
    q = tl.load(q_ptr + b * sq_b + heads[:, None] * sq_h + offs_d[None, :] * sq_d,
                mask=g_ok[:, None] & d_ok[None, :], other=0.0)

    m_i = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_G,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), dtype=tl.float32)
    bt_row = bt_ptr + b * sbt_b
    for n0 in range(n_start, n_stop, BLOCK_N):
        offs_n = n0 + offs_n0
        n_ok = offs_n < n_stop
        if PAGE > 0:  # PAGE_TILES on the split layout (n0 is a multiple of PAGE: BLOCK_N and PARTITION are)
            kt, vv = _page_tiles(kc_ptr, vc_ptr, bt_row, n0, n_stop, kvh, sbt_n, sk_blk, sk_s, sk_h, sk_d, sk_dx,
                                 sv_blk, sv_s, sv_h, sv_d, head_dim, BLOCK_N, BLOCK_D, K_SPLIT_X, PAGE)
        else:
            page = offs_n // block_size
            slot = (offs_n - page * block_size).to(tl.int64)
            phys = tl.load(bt_row + page * sbt_n, mask=n_ok, other=0).to(tl.int64)
            kt = tl.load(kc_ptr + (phys * sk_blk + slot * sk_s + kvh * sk_h)[None, :] + k_d[:, None],
                         mask=n_ok[None, :] & d_ok[:, None], other=0.0)
            vv = tl.load(vc_ptr + (phys * sv_blk + slot * sv_s + kvh * sv_h)[:, None] + offs_d[None, :] * sv_d,
                         mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        s = tl.dot(q, kt, input_precision="ieee") * qk_scale
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(vv.dtype), vv, input_precision="ieee")
        m_i = m_new

    if SPLIT_KV:
        if n_start < seq_len:
            row = (b * num_heads + heads) * num_splits + split          # [BLOCK_G]
            tl.store(ws_m_ptr + row, m_i, mask=g_ok)
            tl.store(ws_l_ptr + row, l_i, mask=g_ok)
            tl.store(ws_acc_ptr + row[:, None] * BLOCK_D + offs_d[None, :], acc, mask=g_ok[:, None])
    else:
        o = acc / tl.where(g_ok, l_i, 1.0)[:, None]
        tl.store(out_ptr + b * so_b + heads[:, None] * so_h + offs_d[None, :] * so_d,
                 o.to(out_ptr.dtype.element_ty), mask=g_ok[:, None] & d_ok[None, :])


@triton.jit
def _attention_paged_decode_reduce_kernel(
    ws_m_ptr, ws_l_ptr, ws_acc_ptr, sl_ptr, out_ptr,
    num_heads, head_dim, partition, num_splits, so_b, so_h, so_d,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1).to(tl.int64)
    seq_len = tl.load(sl_ptr + b)
    n_used = (seq_len + partition - 1) // partition
    base = (b * num_heads + h) * num_splits
    offs_s0 = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    m_run = float("-inf")
    l_run = 0.0
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for s0 in range(0, n_used, BLOCK_S):
        offs_s = s0 + offs_s0
        s_ok = offs_s < n_used
        m_s = tl.load(ws_m_ptr + base + offs_s, mask=s_ok, other=float("-inf"))
        l_s = tl.load(ws_l_ptr + base + offs_s, mask=s_ok, other=0.0)
        a_s = tl.load(ws_acc_ptr + (base + offs_s)[:, None] * BLOCK_D + offs_d[None, :],
                      mask=s_ok[:, None], other=0.0)
        m_new = tl.maximum(m_run, tl.max(m_s, axis=0))
        w = tl.where(s_ok, tl.exp2(m_s - m_new), 0.0)
        alpha = tl.exp2(m_run - m_new)
        l_run = l_run * alpha + tl.sum(l_s * w, axis=0)
        acc = acc * alpha + tl.sum(a_s * w[:, None], axis=0)
        m_run = m_new
    o = acc / l_run
    tl.store(out_ptr + b * so_b + h * so_h + offs_d * so_d, o.to(out_ptr.dtype.element_ty),
             mask=offs_d < head_dim)


def cache_layout(key_cache, value_cache):
    """(block_size, kv_heads, K strides (block, slot, head, d, d // x), x, V strides (block, slot, head, d)) of
    the two cache layouts: [blocks, block_size, kv_heads, head_dim] for both, or the split layout of vLLM's
    paged-attention kernels, K [blocks, kv_heads, head_dim / x, block_size, x] with V [blocks, kv_heads,
    head_dim, block_size] (told apart by K's rank)."""
    if key_cache.dim() == 5:
        k, v = key_cache.stride(), value_cache.stride()
        return (key_cache.shape[3], key_cache.shape[1], (k[0], k[3], k[1], k[4], k[2]), key_cache.shape[4],
                (v[0], v[3], v[1], v[2]))
    k, v = key_cache.stride(), value_cache.stride()
    return key_cache.shape[1], key_cache.shape[2], (*k, 0), 0, v


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def launch_attention_paged_decode(q, key_cache, value_cache, block_tables, seq_lens, num_heads, num_kv_heads,
                                  block_size, softmax_scale):
    batch, _, head_dim = q.shape
    block_size, num_kv_heads, k_strides, split_x, v_strides = cache_layout(key_cache, value_cache)
    out = torch.empty_like(q)
    if batch == 0:
        return out
    group = num_heads // num_kv_heads
    block_g = max(16, _next_pow2(group))
    block_d = max(16, _next_pow2(head_dim))
    partition = TUNABLES["PARTITION"]
    max_ctx = block_tables.shape[1] * block_size
    num_splits = max(1, _cdiv(max_ctx, partition)) if TUNABLES["SPLIT_KV"] else 1
    split = num_splits > 1  # one partition needs no workspace and no second kernel
    block_n, maxnreg = TUNABLES["BLOCK_N"], TUNABLES["MAXNREG"]
    if TUNABLES.get("SHORT_CONTEXT", 0):
        block_n, maxnreg = _chunking(block_n, maxnreg, min(max_ctx, partition) if split else max_ctx,
                                     batch * num_kv_heads * num_splits, block_d, q.device)
    # whole-page tiles: the split layout, a power-of-two page that divides the chunk (and so every partition)
    page_tiles = (TUNABLES["PAGE_TILES"] and split_x > 0 and block_size & (block_size - 1) == 0
                  and block_n % block_size == 0 and k_strides[1] == split_x and k_strides[3] == 1)
    if split:
        ws_m = torch.empty((batch, num_heads, num_splits), dtype=torch.float32, device=q.device)
        ws_l = torch.empty_like(ws_m)
        ws_acc = torch.empty((batch, num_heads, num_splits, block_d), dtype=torch.float32, device=q.device)
    else:
        ws_m = ws_l = ws_acc = out  # unused
    _attention_paged_decode_kernel[(batch, num_kv_heads, num_splits)](
        q, key_cache, value_cache, block_tables, seq_lens, out, ws_m, ws_l, ws_acc,
        group, head_dim, block_size, softmax_scale * LOG2E, partition, num_splits,
        *q.stride(), *k_strides, *v_strides, *block_tables.stride(), *out.stride(),
        num_heads,
        BLOCK_G=block_g, BLOCK_N=block_n, BLOCK_D=block_d, SPLIT_KV=split, K_SPLIT_X=split_x,
        PAGE=block_size if page_tiles else 0,
        num_warps=TUNABLES["num_warps"],
        num_stages=_cap_stages(TUNABLES["num_stages"], 2 * block_n * block_d * q.element_size()),
        **({"maxnreg": maxnreg} if maxnreg else {}),
    )
    if split:
        _attention_paged_decode_reduce_kernel[(batch, num_heads)](
            ws_m, ws_l, ws_acc, seq_lens, out, num_heads, head_dim, partition, num_splits, *out.stride(),
            BLOCK_S=TUNABLES["BLOCK_S"], BLOCK_D=block_d, num_warps=4,
        )
    return out


class Model(nn.Module):
    """The sizes are read from the tensors (q: heads and head size; the cache: block size and KV heads); the init
    arguments, when given, must agree with them."""

    def __init__(self, num_heads: int | None = None, num_kv_heads: int | None = None, head_dim: int | None = None,
                 block_size: int | None = None, softmax_scale: float | None = None):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim, self.block_size = num_heads, num_kv_heads, head_dim, \
            block_size
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else None
        self._sizes: dict[tuple, tuple] = {}  # the checked sizes by the tensors' shapes (they read nothing else)

    def _checked_sizes(self, q, key_cache, value_cache) -> tuple:
        _, heads, head_dim = q.shape
        block_size, kv_heads, _, _, _ = cache_layout(key_cache, value_cache)
        given = (self.num_heads, self.num_kv_heads, self.head_dim, self.block_size)
        if any(g is not None and g != a for g, a in zip(given, (heads, kv_heads, head_dim, block_size))):
            raise ValueError(f"init sizes {given} disagree with the tensors' {(heads, kv_heads, head_dim, block_size)}")
        assert heads % kv_heads == 0
        scale = self.softmax_scale if self.softmax_scale is not None else head_dim ** -0.5
        return heads, kv_heads, block_size, scale

    def forward(self, q, key_cache, value_cache, block_tables, seq_lens):
        key = (q.shape, key_cache.shape, value_cache.shape)
        sizes = self._sizes.get(key)
        if sizes is None:
            if len(self._sizes) > 256:  # batch sizes come and go: keep the cache bounded
                self._sizes.clear()
            sizes = self._sizes[key] = self._checked_sizes(q, key_cache, value_cache)
        heads, kv_heads, block_size, scale = sizes
        return launch_attention_paged_decode(q, key_cache, value_cache, block_tables, seq_lens, heads, kv_heads,
                                             block_size, scale)
