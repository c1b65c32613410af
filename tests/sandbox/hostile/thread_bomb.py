"""expected: limit_exceeded: task limit reached: limit 64
limits: tasks=64
Starts threads without end at import time (a fork bomb's cheaper cousin); the task limit stops it.
"""

import threading
import time

import torch
from torch import nn

threads = []
for _ in range(400):
    thread = threading.Thread(target=time.sleep, args=(600,), daemon=True)
    thread.start()
    threads.append(thread)
    time.sleep(0.002)


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., : x.shape[-1] // 2].clone()
