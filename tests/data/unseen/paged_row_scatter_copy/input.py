import torch

def _make_inputs(num_tokens: int, num_heads: int, head_size: int, num_blocks: int, block_size: int) -> dict[str, torch.Tensor]:
    key = torch.randn(num_tokens, num_heads, head_size, dtype=torch.bfloat16, device='cuda')
    value = torch.randn(num_tokens, num_heads, head_size, dtype=torch.bfloat16, device='cuda')
    key_cache = torch.randn(num_blocks, block_size, num_heads, head_size, dtype=torch.bfloat16, device='cuda')
    value_cache = torch.randn(num_blocks, block_size, num_heads, head_size, dtype=torch.bfloat16, device='cuda')
    slot_mapping = torch.randperm(num_blocks * block_size, device='cuda')[:num_tokens].to(torch.int64)
    slot_mapping[::5] = -1
    return {'key': key, 'value': value, 'key_cache': key_cache, 'value_cache': value_cache, 'slot_mapping': slot_mapping}
