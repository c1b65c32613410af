import torch


def _make_inputs(num_tokens: int, width: int) -> dict[str, torch.Tensor]:
    return {'states': torch.randn(num_tokens, width, dtype=torch.bfloat16, device='cuda')}
