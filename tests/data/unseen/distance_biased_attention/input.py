import torch


def _make_inputs(batch: int, heads: int, length: int, head_dim: int) -> dict[str, torch.Tensor]:
    return {name: torch.randn(batch, heads, length, head_dim, dtype=torch.bfloat16, device='cuda') for name in "qkv"}
