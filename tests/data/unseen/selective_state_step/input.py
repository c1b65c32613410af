import torch


def _make_inputs(batch: int, heads: int, dim: int, dstate: int) -> dict[str, torch.Tensor]:
    return {"state": torch.randn(batch, heads, dim, dstate, dtype=torch.float32, device='cuda') * 0.1,
            "x": torch.randn(batch, heads, dim, dtype=torch.bfloat16, device='cuda'),
            "dt": torch.randn(batch, heads, dim, dtype=torch.bfloat16, device='cuda'),
            "A": -torch.rand(heads, dim, dstate, dtype=torch.float32, device='cuda'),
            "B": torch.randn(batch, dstate, dtype=torch.bfloat16, device='cuda'),
            "C": torch.randn(batch, dstate, dtype=torch.bfloat16, device='cuda'),
            "D": torch.randn(heads, dim, dtype=torch.float32, device='cuda'),
            "dt_bias": torch.randn(heads, dim, dtype=torch.float32, device='cuda') * 0.1,
            "z": torch.randn(batch, heads, dim, dtype=torch.bfloat16, device='cuda')}
