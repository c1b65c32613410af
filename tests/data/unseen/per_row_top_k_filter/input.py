"""Inputs: logits ~ N(0, 2^2) [batch, vocab]; k per row in [1, 64]."""

import torch


def _make_inputs(batch: int, vocab: int, device: str = "cpu"):
    return {
        "logits": torch.randn(batch, vocab, device=device) * 2,
        "k": torch.randint(1, 65, (batch,), device=device, dtype=torch.int64),
    }
