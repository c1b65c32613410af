"""Starts a sleeping child with a marker in its command line, then never returns from its forward (it polls
rather than spins, so the tests beside it keep their CPU)."""

import subprocess
import sys
import time

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{{MARKER}}"], start_new_session=True)
        while True:
            time.sleep(0.05)
