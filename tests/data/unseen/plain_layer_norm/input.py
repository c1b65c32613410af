import torch


def _make_inputs(batch: int, seq: int, width: int) -> dict[str, torch.Tensor]:
    return {'activations': 1.5 * torch.randn(batch, seq, width, dtype=torch.bfloat16, device='cuda') + 0.3}
