import torch


def _make_inputs(tokens: int, k: int, n: int, group_size: int) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(tokens, k, dtype=torch.float16, device='cuda') * 0.1,
            "qweight": torch.randint(-2**31, 2**31 - 1, (k // 8, n), dtype=torch.int32, device='cuda'),
            "scales": torch.rand(k // group_size, n, dtype=torch.float16, device='cuda') * 0.01,
            "zeros": torch.full((k // group_size, n), 8.0, dtype=torch.float16, device='cuda')}
