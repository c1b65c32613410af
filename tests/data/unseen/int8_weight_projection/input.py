import torch


def _make_inputs(tokens: int, hidden: int, out_features: int) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(tokens, hidden, dtype=torch.bfloat16, device='cuda') * 0.1,
            "w_int8": torch.randint(-128, 128, (out_features, hidden), dtype=torch.int8, device='cuda'),
            "w_scale": torch.rand(out_features, dtype=torch.bfloat16, device='cuda') * 0.01}
