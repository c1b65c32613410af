"""expected: runtime_error
A candidate that somehow holds the key (a model that was shown it) and tries every way out: it prints the key
plain, base64-encoded inside a longer blob, hex-encoded and reversed into its log, and raises with all of them
in the message. The key must appear in no result, report or file, in any of those forms.
"""

import base64
import sys

import torch
from torch import nn

KEY = "{{KEY}}"
FORMS = [KEY, base64.b64encode(b"prefix:" + KEY.encode() + b":suffix").decode(), KEY.encode().hex(), KEY[::-1],
         base64.urlsafe_b64encode(b"xy" + KEY.encode()).decode()]
print("\n".join(FORMS), file=sys.stderr)


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("leaked: " + " | ".join(FORMS))
