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
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, key, value, key_cache, value_cache, slot_mapping):
        num_blocks, block_size, heads, dim = key_cache.shape
        valid = slot_mapping >= 0
        slots = slot_mapping[valid]
        key_cache.view(num_blocks * block_size, heads, dim)[slots] = key[valid].to(key_cache.dtype)
        value_cache.view(num_blocks * block_size, heads, dim)[slots] = value[valid].to(value_cache.dtype)
        return key_cache, value_cache


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
