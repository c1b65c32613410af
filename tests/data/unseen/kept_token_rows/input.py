import torch


def _make_inputs(tokens: int, dim: int) -> dict[str, torch.Tensor]:
    return {"hidden": torch.randn(tokens, dim, dtype=torch.bfloat16, device='cuda'),
            "keep": torch.rand(tokens, device='cuda') < 0.4,
            "gate": torch.rand(tokens, device='cuda')}
