import torch


def _make_inputs(rows: int, n: int) -> dict[str, torch.Tensor]:
    return {"ids": torch.randint(0, 3 * n, (rows, n), device='cuda'),
            "scores": torch.randn(rows, n, device='cuda')}
