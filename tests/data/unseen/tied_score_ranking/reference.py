"""Made-up test problem (published format): each row's k best experts by softmax score, as weights and indices.
Some rows hold exact ties (`input.py`), where the indices' order is a tie-break, not a fact of the scores."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = torch.softmax(logits.float(), dim=-1)
        weights, ids = torch.topk(scores, self.k, dim=-1)
        return weights, ids.to(torch.int32)
