"""Paged KV-cache write (reshape-and-cache): scatter the new tokens' keys and values into the paged caches.

For every token t with s = slot_mapping[t] >= 0:
    key_cache  [s // block_size, s % block_size] = key[t]
    value_cache[s // block_size, s % block_size] = value[t]
Tokens with slot -1 (padding) are skipped. Valid slots are distinct. Every other cache entry is left
untouched. The caches are modified in place and returned.
Inputs:
    key, value              [T, num_kv_heads, head_dim]                          bfloat16 (fp16/fp32 smoke)
    key_cache, value_cache  [num_blocks, block_size, num_kv_heads, head_dim]     same dtype
    slot_mapping            [T] int64, slot = block * block_size + offset, or -1
Outputs (tuple): (key_cache, value_cache), the mutated input tensors.
Pure data movement: exact copies, no arithmetic.

The suite's shapes use the layout above. The reference also accepts vLLM's head-major layouts, each cache its
own: values as [num_blocks, num_kv_heads, head_dim, block_size], keys as [num_blocks, num_kv_heads,
head_dim // x, block_size, x] (the semantics a transfer of this operator's kernel is matched on), and
optional k_scale / v_scale: each value divided by its scale in float32 before the cast to the cache's dtype (an
fp8 cache). A scale is one element (per tensor), one per KV head as a 1-D [num_kv_heads] tensor (vLLM's per-head
scales), or any tensor that broadcasts against key [T, num_kv_heads, head_dim] (per token as [T, 1, 1], ...).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, key, value, key_cache, value_cache, slot_mapping, k_scale=None, v_scale=None):
        valid = slot_mapping >= 0
        slots = slot_mapping[valid]
        heads, dim = key.shape[1:]
        if k_scale is not None or v_scale is not None:
            key, value = key.float() / _per_head(k_scale, heads), value.float() / _per_head(v_scale, heads)
        if key_cache.dim() == 4 and tuple(key_cache.shape[2:]) == (heads, dim) == tuple(value_cache.shape[2:]):
            num_blocks, block_size = key_cache.shape[:2]
            key_cache.view(num_blocks * block_size, heads, dim)[slots] = key[valid].to(key_cache.dtype)
            value_cache.view(num_blocks * block_size, heads, dim)[slots] = value[valid].to(value_cache.dtype)
            return key_cache, value_cache
        for new, cache in ((key, key_cache), (value, value_cache)):
            rows = _slot_major(cache, heads, dim)  # a view of the cache as [blocks, block_size, heads, ...]
            block_size = rows.shape[1]
            rows[slots // block_size, slots % block_size] = new[valid].to(cache.dtype).reshape(-1, *rows.shape[2:])
        return key_cache, value_cache


def _per_head(scale, heads):
    """A 1-D scale of one value per KV head, shaped to broadcast over [T, heads, head_dim]; any other as it is."""
    return scale.view(1, heads, 1) if scale.dim() == 1 and scale.numel() == heads > 1 else scale


def _slot_major(cache, heads, dim):
    """A view of a cache in any of the docstring's layouts as [num_blocks, block_size, heads, ...]."""
    if cache.dim() == 4 and tuple(cache.shape[2:]) == (heads, dim):
        return cache
    if cache.dim() == 4 and tuple(cache.shape[1:3]) == (heads, dim):
        return cache.permute(0, 3, 1, 2)
    if cache.dim() == 5 and cache.shape[1] == heads and cache.shape[2] * cache.shape[4] == dim:
        return cache.permute(0, 3, 1, 2, 4)
    raise ValueError(f"kv_cache_write: a cache of shape {list(cache.shape)} is in none of the layouts")


def roofline_flops(inputs, outputs, **_):
    return 0


def roofline_bytes(inputs, outputs, **_):
    """Read the slot mapping and the new key/value rows of the tokens that are written; write only
    those rows of the two caches (not the whole pools)."""
    key, value, slot_mapping = inputs["key"], inputs["value"], inputs["slot_mapping"]
    n_valid = int((slot_mapping >= 0).sum())
    row_k = key[0].numel() * key.element_size()
    row_v = value[0].numel() * value.element_size()
    read = slot_mapping.numel() * slot_mapping.element_size() + n_valid * (row_k + row_v)
    written = n_valid * (row_k + row_v)
    return read, written
