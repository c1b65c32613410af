"""Made-up test problem (published format): a rotary embedding written as complex multiplication: pairs of the
query's features as complex numbers, turned by unit complex numbers of the positions' angles."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim: int, theta: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta

    def forward(self, query: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        steps = torch.arange(0, self.head_dim, 2, device=query.device).float() / self.head_dim
        angles = torch.outer(positions.float(), 1.0 / (self.theta ** steps))
        turns = torch.polar(torch.ones_like(angles), angles)
        pairs = torch.view_as_complex(query.float().reshape(*query.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * turns[:, None, :]).flatten(-2).to(query.dtype)
