"""Made-up test problem (published format): the flat (token, slot) pairs of a routing grouped by expert —
each expert's pair count, the group offsets, and the pairs' flat indices in a stable order by expert."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, n_routed: int) -> None:
        super().__init__()
        self.n_routed = n_routed

    def forward(self, choice: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        flat = choice.flatten().long()
        per_expert = torch.bincount(flat, minlength=self.n_routed).to(torch.int32)
        starts = torch.zeros(self.n_routed + 1, dtype=torch.int32, device=choice.device)
        starts[1:] = torch.cumsum(per_expert, 0)
        grouped = torch.argsort(flat, stable=True).to(torch.int32)
        return per_expert, starts, grouped
