import torch


def _make_inputs(batch: int, max_len: int, dim: int) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(batch, max_len, dim, device='cuda'),
            "lengths": torch.randint(1, max_len + 1, (batch,), device='cuda')}
