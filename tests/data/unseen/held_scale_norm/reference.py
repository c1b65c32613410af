"""Made-up test problem (published format): residual add and RMSNorm whose scale is a parameter the reference
holds and whose shift is a buffer of a submodule, both drawn at random (the published problems pass every tensor
as a forward input), and a buffer it never reads; outputs in the order (sum, normed)."""

import torch
import torch.nn as nn


class _Shift(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.register_buffer("offset", torch.randn(hidden) * 0.1)


class Model(nn.Module):

    def __init__(self, hidden: int, epsilon: float = 1e-6) -> None:
        super().__init__()
        self.epsilon = epsilon
        self.scale = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.shift = _Shift(hidden)
        self.register_buffer("calls", torch.zeros(1))  # held, never read by forward

    def forward(self, residual: torch.Tensor, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        summed = (hidden_states.float() + residual.float()).to(hidden_states.dtype)
        x = summed.float()
        normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.epsilon)
        return summed, (normed * self.scale.float() + self.shift.offset).to(hidden_states.dtype)
