"""expected: tampered: forked process
Leaves processes behind: a plain child, a child in a new session (setsid), and a double-forked daemon, each
sleeping with a marker in its command line; its forward is right. None may outlive the evaluation. Its fork makes
it `tampered` (work in a forked child escapes the audit: the worker counts every fork the candidate makes).
"""

import os
import subprocess
import sys

import torch
from torch import nn

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)", "{{MARKER}}"]
subprocess.Popen(SLEEP)
subprocess.Popen(SLEEP, start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, SLEEP)
    os._exit(0)


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        d = x.shape[-1] // 2
        gate, up = x[..., :d].to(ct), x[..., d:].to(ct)
        return (gate * torch.sigmoid(gate) * up).to(x.dtype)
