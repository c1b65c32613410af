import torch

def _make_inputs(tokens: int, heads: int, head_size: int, num_blocks: int, block_size: int) -> dict[str, torch.Tensor]:
    key = torch.randn(tokens, heads, head_size, dtype=torch.bfloat16, device='cuda')
    value = torch.randn(tokens, heads, head_size, dtype=torch.bfloat16, device='cuda')
    key_cache = torch.zeros(num_blocks, heads, head_size // 8, block_size, 8, dtype=torch.bfloat16, device='cuda')
    value_cache = torch.zeros(num_blocks, heads, head_size, block_size, dtype=torch.bfloat16, device='cuda')
    slots = torch.randperm(num_blocks * block_size, device='cuda')[:tokens].to(torch.int64)
    slots[::5] = -1  # padding tokens
    return {'key': key, 'value': value, 'key_cache': key_cache, 'value_cache': value_cache, 'slot_mapping': slots}

def get_inputs() -> list[torch.Tensor]:
    return list(_make_inputs(tokens=20, heads=2, head_size=64, num_blocks=8, block_size=16).values())

def get_init_inputs() -> dict[str, object]:
    return {}
