"""Made-up test problem: each token's key and value written in place into paged caches whose layouts split the
head (keys [blocks, heads, head_size // 8, block_size, 8], values [blocks, heads, head_size, block_size]), in a
Python loop that skips padding slots (-1). `kv_cache_dtype` "auto": bf16 caches, the scales ignored; "fp8":
e4m3fn caches, each value divided by its scale in float32 before the cast. The caches returned."""

import torch.nn as nn


class Model(nn.Module):

    def __init__(self, kv_cache_dtype: str = "auto") -> None:
        super().__init__()
        self.kv_cache_dtype = kv_cache_dtype

    def forward(self, key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale):
        _, heads, groups, block_size, x = key_cache.shape
        for t in range(key.shape[0]):
            slot = int(slot_mapping[t].item())
            if slot < 0:
                continue
            block, offset = slot // block_size, slot % block_size
            k, v = key[t], value[t]
            if self.kv_cache_dtype != "auto":
                k, v = (k.float() / k_scale).to(key_cache.dtype), (v.float() / v_scale).to(value_cache.dtype)
            key_cache[block, :, :, offset, :] = k.reshape(heads, groups, x)
            value_cache[block, :, :, offset] = v
        return key_cache, value_cache
