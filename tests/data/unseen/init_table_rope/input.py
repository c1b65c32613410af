import torch

def _make_inputs(num_tokens: int, num_heads: int, head_size: int) -> dict[str, torch.Tensor]:
    return {"positions": torch.randint(0, 4096, (num_tokens,), device='cuda'),
            "query": torch.randn(num_tokens, num_heads, head_size, dtype=torch.bfloat16, device='cuda')}
