import torch


def _make_inputs(bh: int, seq: int, dim: int) -> dict[str, torch.Tensor]:
    return {"bias": torch.randn(bh, seq, seq, dtype=torch.float16, device="cuda"),
            "q": torch.randn(bh, seq, dim, dtype=torch.float16, device="cuda"),
            "k": torch.randn(bh, seq, dim, dtype=torch.float16, device="cuda")}
