import torch

def _make_inputs(num_tokens: int, num_heads: int, head_dim: int) -> dict[str, torch.Tensor]:
    q = torch.randn(num_tokens, num_heads, head_dim, dtype=torch.bfloat16, device='cuda')
    return {'q': q}
