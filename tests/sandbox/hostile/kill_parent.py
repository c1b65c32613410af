"""expected: passed
Tries to kill the process that started it: its parent, and any process whose command line names aka_tui
(other than evaluation workers); `aka` must finish and report normally.
"""

import os
import signal

import torch
from torch import nn

try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != os.getpid():
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read()
            if b"aka_tui" in command and b"worker_entry" not in command:
                os.kill(int(name), signal.SIGKILL)
        except OSError:
            pass


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        d = x.shape[-1] // 2
        gate, up = x[..., :d].to(ct), x[..., d:].to(ct)
        return (gate * torch.sigmoid(gate) * up).to(x.dtype)
