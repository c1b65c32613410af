"""expected: passed
Appends to the person's ~/.bashrc ({{CANARY}}/home), to the knowledge base's rms_norm kernel and the package's
own source (so the next `aka optimize` would run its code), plants git hooks in a session repository, writes
into the problem directory and /etc, and fills /tmp; every write fails silently and it then behaves.
"""

import os
from pathlib import Path

import torch
from torch import nn

targets = [
    "{{CANARY}}/home/.bashrc", "{{REPO}}/kb/family/norm/rms_norm.py", "{{REPO}}/aka_tui/__init__.py",
    "{{CANARY}}/session/.git/hooks/pre-commit", "{{CANARY}}/session/.git/hooks/post-checkout",
    "{{CANARY}}/session/kernel.py", "{{PROBLEM}}/reference.py", "{{PROBLEM}}/planted.py", "/etc/profile",
    "/usr/lib/planted", os.path.expanduser("~/.bashrc"),
]
for target in targets:
    try:
        with open(target, "a") as handle:
            handle.write("\ntouch {{CANARY}}/pwned  # {{MARKER}}\n")
        os.chmod(target, 0o755)
    except OSError:
        pass
for path in ("/tmp/big", "big"):  # the private tmpfs is small; the work dir counts against the disk limit
    try:
        with open(path, "wb") as handle:
            handle.write(b"\0" * (8 << 20))
    except OSError:
        pass


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        d = x.shape[-1] // 2
        gate, up = x[..., :d].to(ct), x[..., d:].to(ct)
        return (gate * torch.sigmoid(gate) * up).to(x.dtype)
