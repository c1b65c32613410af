"""MoE combine: sum the k (already weighted) expert outputs of each token, times a routed scaling factor.

    out[t, h] = routed_scaling_factor * sum_{j < k} x[t, j, h]
Inputs:
    x    [num_tokens, top_k, hidden]   bfloat16 (float16/float32 in smoke shapes)
Init kwargs:
    routed_scaling_factor (float, default 1.0; DeepSeek-V3 uses 2.5)
Output:
    out  [num_tokens, hidden]          dtype of x; the sum is accumulated in promote(dtype, float32)
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, routed_scaling_factor: float = 1.0):
        super().__init__()
        self.routed_scaling_factor = float(routed_scaling_factor)

    def forward(self, x: torch.Tensor):
        ct = torch.promote_types(x.dtype, torch.float32)
        out = x.sum(dim=1, dtype=ct)
        if self.routed_scaling_factor != 1.0:
            out = out * self.routed_scaling_factor
        return out.to(x.dtype)


def roofline_flops(inputs, outputs, routed_scaling_factor: float = 1.0, **_):
    """(k-1) adds per output element, plus one multiply when the scaling factor is not 1."""
    t, k, h = inputs["x"].shape
    return t * h * (k - 1) + (t * h if float(routed_scaling_factor) != 1.0 else 0)
