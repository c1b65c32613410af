"""Inputs: key, value ~ N(0, 1) bf16 [tokens, heads, dim]; zeroed fp8 caches [blocks, block_size, heads, dim];
distinct slots; one fp32 scale per head, 0.02-0.08."""

import torch


def _make_inputs(tokens: int, heads: int, dim: int, blocks: int, block_size: int, device: str = "cpu"):
    slots = torch.randperm(blocks * block_size, device=device)[:tokens]
    return {
        "key": torch.randn(tokens, heads, dim, device=device, dtype=torch.bfloat16),
        "value": torch.randn(tokens, heads, dim, device=device, dtype=torch.bfloat16),
        "key_cache": torch.zeros(blocks, block_size, heads, dim, device=device, dtype=torch.float8_e4m3fn),
        "value_cache": torch.zeros(blocks, block_size, heads, dim, device=device, dtype=torch.float8_e4m3fn),
        "slot_mapping": slots,
        "k_scale": torch.linspace(0.02, 0.08, heads, device=device),
        "v_scale": torch.linspace(0.07, 0.03, heads, device=device),
    }
