"""Made-up test problem: a root-mean-square normalisation behind another interface.

Init takes the epsilon first and the model width second; the input is `hidden_states` of shape
[batch, seq, width] with a learned per-channel `gamma`; the result is a dict. Statistics in fp32, one
rounding to the input dtype at the end.
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, variance_epsilon: float = 1e-5, width: int = 0):
        super().__init__()
        self.variance_epsilon = float(variance_epsilon)
        self.width = width

    def forward(self, hidden_states: torch.Tensor, gamma: torch.Tensor) -> dict:
        h = hidden_states.float()
        inv = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return {"normalized": (h * inv * gamma.float()).to(hidden_states.dtype)}
