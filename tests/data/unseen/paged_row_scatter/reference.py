"""Made-up test problem (published format): write each token's key and value rows into paged caches at its
slot (block = slot // block_size, offset = slot % block_size), skipping slot -1, in place; return the caches."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self) -> None:
        super().__init__()

    def forward(self, key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                slot_mapping: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        block_size = key_cache.shape[1]
        valid = slot_mapping >= 0
        slots = slot_mapping[valid]
        key_cache[slots // block_size, slots % block_size] = key[valid]
        value_cache[slots // block_size, slots % block_size] = value[valid]
        return key_cache, value_cache
