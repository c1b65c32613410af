"""expected: crashed
Replaces the files the evaluator reads back after a worker dies with symbolic links to the person's private SSH
key ({{CANARY}}/home/.ssh): its log (whose tail goes into the crash message) and the start-up error file (read
when the worker exits with the shim's "could not start" status, 126), then exits with that status. The evaluator
must not follow them: the key's text appears in no result, output or file.
"""

import os
import sys

import torch
from torch import nn

for name in (sys.argv[1], ".spawn-error"):  # sys.argv[1]: the worker's log, in the work dir
    try:
        os.unlink(name)
    except OSError:
        pass
    os.symlink("{{CANARY}}/home/.ssh/id_ed25519", name)
sys.stdout.flush()
os._exit(126)


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., : x.shape[-1] // 2].clone()
