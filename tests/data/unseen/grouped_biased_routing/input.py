import torch


def _make_inputs(tokens: int, experts: int) -> dict[str, torch.Tensor]:
    return {"logits": torch.randn(tokens, experts, dtype=torch.float32, device='cuda'),
            "bias": torch.randn(experts, dtype=torch.float32, device='cuda') * 0.1}
