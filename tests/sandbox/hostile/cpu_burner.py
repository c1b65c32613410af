"""expected: limit_exceeded: CPU time limit exceeded: limit 8 s
limits: cpu_s=8
Spins in its forward far longer than its CPU time allows (the wall-clock limit is longer still).
"""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = 0
        while True:
            n += 1
