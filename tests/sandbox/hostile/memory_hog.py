"""expected: limit_exceeded: out of memory: limit 1 GiB
limits: memory_gib=1
Allocates 2 GiB in 256 MiB pieces (every page touched) in its forward; the sandbox's memory limit ends it with
a clear verdict before the host's OOM killer has to pick anything.
"""

import time

import torch
from torch import nn

held = []


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(8):
            held.append(b"\x01" * (256 << 20))
            time.sleep(0.2)  # let a polling watchdog see each step (a cgroup sees every page at once)
        return x[..., : x.shape[-1] // 2].clone()
