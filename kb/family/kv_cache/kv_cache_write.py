"""Reference Triton kernel for kv_cache_write (paged reshape-and-cache).

Each program copies TOKENS_PER_PROGRAM new tokens. For a token t with slot s = slot_mapping[t] >= 0 the
row key[t] ([num_kv_heads, head_dim], flattened to E = heads * head_dim elements) is copied to
key_cache[s // block_size, s % block_size] and value[t] likewise to value_cache; slot -1 (padding) is
skipped by masking the loads and stores. Rows longer than BLOCK are walked in BLOCK-sized chunks, so any
BLOCK in the search space is correct. Pure data movement: the values are stored bit-exact (a dtype cast
only, a no-op when key and cache share a dtype). Offsets are int64 (the pools can exceed 2^31 elements).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK": 1024, "TOKENS_PER_PROGRAM": 1, "num_warps": 4, "CONTIG_ROWS": False}
SEARCH_SPACE = {
    "BLOCK": [128, 256, 512, 1024, 2048],
    "TOKENS_PER_PROGRAM": [1, 2, 4, 8],
    "num_warps": [1, 2, 4, 8],
    "CONTIG_ROWS": [False, True],
}


@triton.jit
def _kv_cache_write_kernel(
    key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_ptr,
    num_tokens, head_dim, row_elems, block_size,
    sk_t, sk_h, sk_d, sv_t, sv_h, sv_d,
    skc_b, skc_s, skc_h, skc_d, svc_b, svc_s, svc_h, svc_d,
    BLOCK: tl.constexpr, TOKENS_PER_PROGRAM: tl.constexpr, CONTIG_ROWS: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    for i in tl.static_range(TOKENS_PER_PROGRAM):
        t = pid * TOKENS_PER_PROGRAM + i
        t_ok = t < num_tokens
        slot = tl.load(slot_ptr + t, mask=t_ok, other=-1).to(tl.int64)
        ok = t_ok & (slot >= 0)
        blk = slot // block_size
        pos = slot - blk * block_size
        kc_row = key_cache_ptr + blk * skc_b + pos * skc_s
        vc_row = value_cache_ptr + blk * svc_b + pos * svc_s
        k_row = key_ptr + t * sk_t
        v_row = value_ptr + t * sv_t
        for e0 in range(0, row_elems, BLOCK):
            e = e0 + offs
            m = (e < row_elems) & ok
            if CONTIG_ROWS:
                k = tl.load(k_row + e, mask=m)
                v = tl.load(v_row + e, mask=m)
                tl.store(kc_row + e, k.to(key_cache_ptr.dtype.element_ty), mask=m)
                tl.store(vc_row + e, v.to(value_cache_ptr.dtype.element_ty), mask=m)
            else:
                h = (e // head_dim).to(tl.int64)
                d = (e - h * head_dim).to(tl.int64)
                k = tl.load(k_row + h * sk_h + d * sk_d, mask=m)
                v = tl.load(v_row + h * sv_h + d * sv_d, mask=m)
                tl.store(kc_row + h * skc_h + d * skc_d, k.to(key_cache_ptr.dtype.element_ty), mask=m)
                tl.store(vc_row + h * svc_h + d * svc_d, v.to(value_cache_ptr.dtype.element_ty), mask=m)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def launch_kv_cache_write(key, value, key_cache, value_cache, slot_mapping):
    num_tokens, heads, head_dim = key.shape
    block_size = key_cache.shape[1]
    if num_tokens == 0:
        return key_cache, value_cache
    tpp = TUNABLES["TOKENS_PER_PROGRAM"]

    def rows_contiguous(t: torch.Tensor, head_axis: int) -> bool:
        return t.stride(head_axis + 1) == 1 and t.stride(head_axis) == head_dim

    contig = bool(TUNABLES["CONTIG_ROWS"]) and all(
        rows_contiguous(t, axis) for t, axis in ((key, 1), (value, 1), (key_cache, 2), (value_cache, 2)))
    grid = (_cdiv(num_tokens, tpp),)
    _kv_cache_write_kernel[grid](
        key, value, key_cache, value_cache, slot_mapping,
        num_tokens, head_dim, heads * head_dim, block_size,
        *key.stride(), *value.stride(), *key_cache.stride(), *value_cache.stride(),
        BLOCK=TUNABLES["BLOCK"], TOKENS_PER_PROGRAM=tpp, CONTIG_ROWS=contig, num_warps=TUNABLES["num_warps"],
    )
    return key_cache, value_cache


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, key, value, key_cache, value_cache, slot_mapping):
        return launch_kv_cache_write(key, value, key_cache, value_cache, slot_mapping)
