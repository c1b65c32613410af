import torch


def _make_inputs(batch: int, channels: int, length: int) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(batch, channels, length, dtype=torch.bfloat16, device="cuda"),
            "weight": torch.randn(channels, channels, 3, dtype=torch.bfloat16, device="cuda") * channels ** -0.5,
            "bias": torch.randn(channels, dtype=torch.bfloat16, device="cuda")}
