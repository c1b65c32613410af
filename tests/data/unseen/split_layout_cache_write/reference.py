"""Made-up test problem (published format): each token's key and value written in place into paged caches
whose layouts split the head: keys as [blocks, heads, head_size // 8, block_size, 8], values as
[blocks, heads, head_size, block_size]; the caches returned (the same tensors)."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self) -> None:
        super().__init__()

    def forward(self, key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                slot_mapping: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, heads, groups, block_size, x = key_cache.shape
        block = slot_mapping // block_size
        offset = slot_mapping % block_size
        key_cache[block, :, :, offset, :] = key.view(key.shape[0], heads, groups, x)
        value_cache[block, :, :, offset] = value
        return key_cache, value_cache
