"""Made-up test problem (published format): copies of the paged caches with each token's key and value rows
written at its slot (block = slot // block_size, offset = slot % block_size), slot -1 skipped; the given caches
are left as they are."""

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
        new_keys = key_cache.clone()
        new_values = value_cache.clone()
        new_keys[slots // block_size, slots % block_size] = key[valid]
        new_values[slots // block_size, slots % block_size] = value[valid]
        return new_keys, new_values
