"""Fixture in the Atrex-Bench layout (written for our tests): y = x * sigmoid(x) * alpha."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) * self.alpha
