import torch


def _make_inputs(num_tokens: int, num_heads: int, head_dim: int) -> dict[str, torch.Tensor]:
    return {"query": torch.randn(num_tokens, num_heads, head_dim, dtype=torch.bfloat16, device='cuda'),
            "positions": torch.randint(0, 8192, (num_tokens,), device='cuda')}
