"""Reference Triton kernel for kv_cache_write (paged reshape-and-cache).

Each program copies TOKENS_PER_PROGRAM new tokens. For a token t with slot s = slot_mapping[t] >= 0 the
row key[t] ([num_kv_heads, head_dim], flattened to E = heads * head_dim elements) is copied to
key_cache[s // block_size, s % block_size] and value[t] likewise to value_cache; slot -1 (padding) is
skipped by masking the loads and stores. Rows longer than BLOCK are walked in BLOCK-sized chunks, so any
BLOCK in the search space is correct. Pure data movement: the values are stored bit-exact (a dtype cast
only, a no-op when key and cache share a dtype). Offsets are int64 (the pools can exceed 2^31 elements).

Cache layouts (each cache its own, read from its shape against key's heads and head size):
  [num_blocks, block_size, heads, head_dim]          token-major (the problem's)
  [num_blocks, heads, head_dim, block_size]          head-major (vLLM's value cache)
  [num_blocks, heads, head_dim // x, block_size, x]  split (vLLM's key cache: x elements of a head together)
Token-major and head-major caches take the plain addressing (any strides for block, slot, head and d); a split
cache turns SPLIT on, which takes element d of a head to (d // x, d % x) on two strides.
With k_scale and v_scale (SCALED) each value is divided by its scale in fp32 before the cast to the cache's dtype
(an fp8 cache). A scale is one element (per tensor), one per head as a 1-D [heads] tensor (vLLM's per-head
scales), or any tensor that broadcasts against key [tokens, heads, head_dim] (per token as [tokens, 1, 1], ...):
its strides after broadcasting (0 along the broadcast axes) address it per element (SCALE_VEC).
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
def _to_cache(x, scale_ptr, cache_ptr, SCALED: tl.constexpr, SCALE_VEC: tl.constexpr, scale_offs, mask):
    """x in the cache's dtype; with SCALED divided by the scale first (IEEE division in fp32, as torch): one
    scalar, or with SCALE_VEC each element's own at scale_offs."""
    if SCALED:
        if SCALE_VEC:
            scale = tl.load(scale_ptr + scale_offs, mask=mask, other=1.0)
        else:
            scale = tl.load(scale_ptr)
        x = tl.div_rn(x.to(tl.float32), scale.to(tl.float32))
    return x.to(cache_ptr.dtype.element_ty)


@triton.jit
def _kv_cache_write_kernel(
    key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_ptr, k_scale_ptr, v_scale_ptr,
    num_tokens, head_dim, row_elems, block_size,
    sk_t, sk_h, sk_d, sv_t, sv_h, sv_d,
    skc_b, skc_s, skc_h, skc_d, skc_x, kx, svc_b, svc_s, svc_h, svc_d, svc_x, vx,
    BLOCK: tl.constexpr, TOKENS_PER_PROGRAM: tl.constexpr, CONTIG_ROWS: tl.constexpr, SPLIT: tl.constexpr = False,
    SCALED: tl.constexpr = False, SCALE_VEC: tl.constexpr = False,
    ks_t=0, ks_h=0, ks_d=0, vs_t=0, vs_h=0, vs_d=0,
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
                tl.store(kc_row + e, _to_cache(k, k_scale_ptr, key_cache_ptr, SCALED, False, e, m), mask=m)
                tl.store(vc_row + e, _to_cache(v, v_scale_ptr, value_cache_ptr, SCALED, False, e, m), mask=m)
            else:
                h = (e // head_dim).to(tl.int64)
                d = (e - h * head_dim).to(tl.int64)
                k = tl.load(k_row + h * sk_h + d * sk_d, mask=m)
                v = tl.load(v_row + h * sv_h + d * sv_d, mask=m)
                if SPLIT:  # d as (d // x, d % x) on each cache's two strides
                    kd = (d // kx) * skc_d + (d % kx) * skc_x
                    vd = (d // vx) * svc_d + (d % vx) * svc_x
                else:
                    kd = d * skc_d
                    vd = d * svc_d
                k_so = t * ks_t + h * ks_h + d * ks_d  # unused unless SCALE_VEC
                v_so = t * vs_t + h * vs_h + d * vs_d
                tl.store(kc_row + h * skc_h + kd, _to_cache(k, k_scale_ptr, key_cache_ptr, SCALED, SCALE_VEC, k_so, m),
                         mask=m)
                tl.store(vc_row + h * svc_h + vd, _to_cache(v, v_scale_ptr, value_cache_ptr, SCALED, SCALE_VEC, v_so, m),
                         mask=m)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _cache_layout(cache: torch.Tensor, heads: int, head_dim: int) -> tuple[int, tuple[int, ...], int, str]:
    """(block_size, strides (block, slot, head, d // x, d % x), x, layout) of a cache in one of the layouts of the
    module docstring; layout is "token-major", "head-major" or "split"."""
    shape, st = tuple(cache.shape), cache.stride()
    if cache.dim() == 4 and shape[2:] == (heads, head_dim):
        return shape[1], (st[0], st[1], st[2], 0, st[3]), head_dim, "token-major"
    if cache.dim() == 4 and shape[1:3] == (heads, head_dim):
        return shape[3], (st[0], st[3], st[1], 0, st[2]), head_dim, "head-major"
    if cache.dim() == 5 and shape[1] == heads and shape[2] * shape[4] == head_dim:
        return shape[3], (st[0], st[3], st[1], st[2], st[4]), shape[4], "split"
    raise ValueError(f"kv_cache_write: a cache of shape {list(shape)} is none of [blocks, block_size, {heads}, "
                     f"{head_dim}], [blocks, {heads}, {head_dim}, block_size] or [blocks, {heads}, "
                     f"{head_dim} // x, block_size, x]")


def _kernel_strides(strides: tuple[int, ...], x: int, split: bool) -> tuple[int, ...]:
    """A cache's kernel arguments (block, slot, head, d, d % x strides, x): with SPLIT the fourth stride is
    d // x's; without it, d's own (an unsplit cache has no d // x stride, so both forms address it alike)."""
    block, slot, head, hi, lo = strides
    return (block, slot, head, hi, lo, x) if split else (block, slot, head, lo, 0, 1)


_PLANS: dict = {}  # (cache shapes and strides, key's heads and head size) -> launch arguments of the layouts


def _plan(key, key_cache, value_cache) -> tuple:
    """(block_size, cache stride arguments, split, both token-major) of a cache pair, cached per shapes and
    strides: reading the layouts costs a few µs of Python a call, which a decode-sized write would pay."""
    plan_key = (key.shape[1:], key_cache.shape, key_cache.stride(), value_cache.shape, value_cache.stride())
    plan = _PLANS.get(plan_key)
    if plan is None:
        heads, head_dim = key.shape[1:]
        block_size, k_strides, kx, k_layout = _cache_layout(key_cache, heads, head_dim)
        v_block_size, v_strides, vx, v_layout = _cache_layout(value_cache, heads, head_dim)
        if v_block_size != block_size:
            raise ValueError(f"kv_cache_write: key blocks of {block_size} slots, value blocks of {v_block_size}")
        split = "split" in (k_layout, v_layout)
        plan = (block_size, _kernel_strides(k_strides, kx, split) + _kernel_strides(v_strides, vx, split), split,
                k_layout == v_layout == "token-major")
        _PLANS[plan_key] = plan
    return plan


def launch_kv_cache_write(key, value, key_cache, value_cache, slot_mapping, k_scale=None, v_scale=None):
    num_tokens, heads, head_dim = key.shape
    if (k_scale is None) != (v_scale is None):
        raise ValueError("kv_cache_write: pass both k_scale and v_scale, or neither")
    block_size, cache_args, split, token_major = _plan(key, key_cache, value_cache)
    if num_tokens == 0:
        return key_cache, value_cache
    tpp = TUNABLES["TOKENS_PER_PROGRAM"]

    def rows_contiguous(t: torch.Tensor, head_axis: int) -> bool:
        return t.stride(head_axis + 1) == 1 and t.stride(head_axis) == head_dim

    scaled = k_scale is not None
    scale_args = {}
    if scaled and (k_scale.numel() > 1 or v_scale.numel() > 1):  # a scale per head, token or element
        strides = [_scale_strides(sc, key.shape, name) for sc, name in ((k_scale, "k_scale"), (v_scale, "v_scale"))]
        scale_args = dict(zip(("ks_t", "ks_h", "ks_d", "vs_t", "vs_h", "vs_d"), strides[0] + strides[1]),
                          SCALE_VEC=True)
    # the contiguous-rows path has no head or d index to address a per-element scale with
    contig = bool(TUNABLES["CONTIG_ROWS"]) and token_major and not scale_args and all(
        rows_contiguous(t, axis) for t, axis in ((key, 1), (value, 1), (key_cache, 2), (value_cache, 2)))
    grid = (_cdiv(num_tokens, tpp),)
    _kv_cache_write_kernel[grid](
        key, value, key_cache, value_cache, slot_mapping, k_scale if scaled else key, v_scale if scaled else value,
        num_tokens, head_dim, heads * head_dim, block_size, *key.stride(), *value.stride(), *cache_args,
        BLOCK=TUNABLES["BLOCK"], TOKENS_PER_PROGRAM=tpp, CONTIG_ROWS=contig, SPLIT=split, SCALED=scaled,
        num_warps=TUNABLES["num_warps"], **scale_args,
    )
    return key_cache, value_cache


def _scale_strides(scale: torch.Tensor, shape: torch.Size, name: str) -> tuple[int, ...]:
    """Element strides of a scale broadcast against key's [tokens, heads, head_dim] (0 on broadcast axes); a 1-D
    scale of one value per head applies per head."""
    if scale.dim() == 1 and scale.numel() == shape[1] > 1:
        scale = scale.view(1, shape[1], 1)
    try:
        return scale.broadcast_to(shape).stride()
    except RuntimeError:
        raise ValueError(f"kv_cache_write: {name} of shape {list(scale.shape)} does not broadcast against key "
                         f"{list(shape)}; give one value, one per head ([heads]) or one per token ([tokens, 1, 1])") from None


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, key, value, key_cache, value_cache, slot_mapping, k_scale=None, v_scale=None):
        return launch_kv_cache_write(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale)
