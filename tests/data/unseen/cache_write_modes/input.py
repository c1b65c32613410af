"""Inputs: keys and values ~ N(0, 1) bf16 [tokens, heads, head_size]; zeroed caches (bf16, or e4m3fn for fp8);
distinct slots with every fifth -1; scales 1 ("auto", as a server passes them) or 0.05 and 0.1 (fp8)."""

import torch


def _make_inputs(tokens: int, heads: int, head_size: int, num_blocks: int, block_size: int, fp8: bool,
                 device: str = "cpu"):
    cache_dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
    key = torch.randn(tokens, heads, head_size, device=device).to(torch.bfloat16)
    value = torch.randn(tokens, heads, head_size, device=device).to(torch.bfloat16)
    key_cache = torch.zeros(num_blocks, heads, head_size // 8, block_size, 8, device=device).to(cache_dtype)
    value_cache = torch.zeros(num_blocks, heads, head_size, block_size, device=device).to(cache_dtype)
    slots = torch.randperm(num_blocks * block_size, device=device)[:tokens]
    slots[::5] = -1
    scale = 0.05 if fp8 else 1.0
    return {"key": key, "value": value, "key_cache": key_cache, "value_cache": value_cache, "slot_mapping": slots,
            "k_scale": torch.tensor(scale, device=device), "v_scale": torch.tensor(2 * scale if fp8 else scale,
                                                                                   device=device)}
