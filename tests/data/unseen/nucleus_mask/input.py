"""Inputs: logits ~ N(0, 3^2) [batch, vocab]; top_k in [1, 50) and top_p in [0.4, 0.9) per row."""

import torch


def _make_inputs(batch: int, vocab: int, device: str = "cpu"):
    return {
        "logits": torch.randn(batch, vocab, device=device) * 3,
        "top_k": torch.randint(1, 50, (batch,), device=device),
        "top_p": torch.rand(batch, device=device) * 0.5 + 0.4,
    }
