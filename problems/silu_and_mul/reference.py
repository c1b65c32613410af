"""SiLU-and-multiply (SwiGLU activation of a fused gate_up projection).

Semantics (computed in ``ct = promote_types(x.dtype, float32)``, one rounding at the end):

    gate = x[:, :I]      (first half: the gate projection)
    up   = x[:, I:]      (second half: the up projection)
    out  = (silu(gate) * up).to(x.dtype),   silu(g) = g * sigmoid(g) = g / (1 + exp(-g))

Inputs:
    x:   [num_tokens, 2 * intermediate_size], float dtype
Output:
    out: [num_tokens, intermediate_size], dtype of x

Init kwargs: none.
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        d = x.shape[-1] // 2
        gate = x[..., :d].to(ct)
        up = x[..., d:].to(ct)
        return (gate * torch.sigmoid(gate) * up).to(x.dtype)
