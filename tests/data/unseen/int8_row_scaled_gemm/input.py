import torch


def _make_inputs(m: int, k: int, n: int) -> dict[str, torch.Tensor]:
    return {"a": torch.randint(-128, 128, (m, k), dtype=torch.int8, device='cuda'),
            "b": torch.randint(-128, 128, (n, k), dtype=torch.int8, device='cuda').t(),
            "scale_a": torch.rand(m, 1, device='cuda') * 0.01,
            "scale_b": torch.rand(1, n, device='cuda') * 0.01,
            "bias": torch.randn(n, dtype=torch.bfloat16, device='cuda')}
