import torch


def _make_inputs(rows: int, experts: int, k: int) -> dict[str, torch.Tensor]:
    logits = torch.randn(rows, experts, dtype=torch.float32, device='cuda')
    logits[::4, :2] = 4.0  # every fourth row: its two best experts tied exactly
    return {'logits': logits}
