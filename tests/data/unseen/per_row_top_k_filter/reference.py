"""Made-up test problem (published format): every row keeps the logits at or above its own k-th largest (a k
per row, ties with the k-th kept), the rest become -inf; written with one top-k as wide as the largest k."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self) -> None:
        super().__init__()

    def forward(self, logits: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        widest = int(k.max())
        kth = logits.topk(widest, dim=1).values.gather(1, (k.long() - 1).unsqueeze(1))
        return logits.masked_fill(logits < kth, float("-inf"))
