"""Made-up test problem (published format): a root-mean-square normalisation without a learned weight,
y = x * rsqrt(mean(x^2) + eps) over the last axis (statistics in float32, one rounding at the end)."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, epsilon: float = 1e-6) -> None:
        super().__init__()
        self.epsilon = float(epsilon)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        f = states.float()
        return (f * torch.rsqrt(f.pow(2).mean(dim=-1, keepdim=True) + self.epsilon)).to(states.dtype)
