"""Made-up test problem (published format): each token's key and value written in place into paged caches whose
layouts split the head (keys [blocks, heads, head_size // 8, block_size, 8], values [blocks, heads, head_size,
block_size]), token by token in a Python loop that skips padding slots (-1); the caches returned."""

import torch.nn as nn


class Model(nn.Module):

    def __init__(self) -> None:
        super().__init__()

    def forward(self, key, value, key_cache, value_cache, slot_mapping):
        _, heads, groups, block_size, x = key_cache.shape
        for t, slot in enumerate(slot_mapping.tolist()):
            if slot < 0:
                continue
            block, offset = slot // block_size, slot % block_size
            key_cache[block, :, :, offset, :] = key[t].view(heads, groups, x)
            value_cache[block, :, :, offset] = value[t]
        return key_cache, value_cache
