import torch


def _make_inputs(rows: int, width: int) -> dict[str, torch.Tensor]:
    return {"scores": torch.randn(rows, width, dtype=torch.float32, device='cuda') * 3}
