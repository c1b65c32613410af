"""expected: passed
Reads the whole environment and looks for anything that could be a credential (the fake API key the test put
in the parent's environment, tokens, passwords); it would raise with what it found, so a `passed` verdict
means it found nothing. It also writes the environment into its work dir and its log.
"""

import os
import re

import torch
from torch import nn

found = {k: v for k, v in os.environ.items() if re.search(r"KEY|TOKEN|SECRET|PASSW|AUTH", k, re.I)}
found.update({k: v for k, v in os.environ.items() if "sk-ant-" in v})
with open("environment.txt", "w") as handle:
    handle.write(repr(dict(os.environ)))
print(dict(os.environ))
if found:
    raise RuntimeError(f"credentials visible to the candidate: {found}")


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        d = x.shape[-1] // 2
        gate, up = x[..., :d].to(ct), x[..., d:].to(ct)
        return (gate * torch.sigmoid(gate) * up).to(x.dtype)
