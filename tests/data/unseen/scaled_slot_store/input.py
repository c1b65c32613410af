"""Inputs: key, value ~ N(0, 1) bf16 [tokens, heads, dim]; zeroed fp8 caches [blocks, block_size, heads, dim];
distinct slots; per-tensor scales 0.05 and 0.04."""

import torch


def _make_inputs(tokens: int, heads: int, dim: int, blocks: int, block_size: int, device: str = "cpu"):
    slots = torch.randperm(blocks * block_size, device=device)[:tokens]
    return {
        "key": torch.randn(tokens, heads, dim, device=device, dtype=torch.bfloat16),
        "value": torch.randn(tokens, heads, dim, device=device, dtype=torch.bfloat16),
        "key_cache": torch.zeros(blocks, block_size, heads, dim, device=device, dtype=torch.float8_e4m3fn),
        "value_cache": torch.zeros(blocks, block_size, heads, dim, device=device, dtype=torch.float8_e4m3fn),
        "slot_mapping": slots,
        "k_scale": torch.tensor(0.05, device=device),
        "v_scale": torch.tensor(0.04, device=device),
    }
