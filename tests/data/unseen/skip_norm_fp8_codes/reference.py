"""Made-up test problem: a skip connection, a root-mean-square normalisation, then per-row 8-bit float codes
in the e4m3 format with exponent bias 8 (largest value 240, no negative zero), behind another interface.

Init takes the epsilon as `variance_epsilon`; the inputs are `hidden`, `skip` ([rows, width]) and `gamma`
([width]); the result is a dict with the codes, the per-row scales ([rows, 1], float32) and the new skip
stream. Statistics in fp32 over the rounded sum, one rounding of the normalised row to the input dtype,
scale = row amax / 240 (1 for an all-zero row), codes = normalised row / scale.
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, variance_epsilon: float = 1e-6):
        super().__init__()
        self.variance_epsilon = float(variance_epsilon)

    def forward(self, hidden: torch.Tensor, skip: torch.Tensor, gamma: torch.Tensor) -> dict:
        stream = hidden + skip
        s = stream.float()
        inv = torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        normed = (s * inv * gamma.float()).to(hidden.dtype).float()
        row_scale = normed.abs().amax(-1, keepdim=True) / 240.0
        row_scale = torch.where(row_scale == 0, torch.ones_like(row_scale), row_scale)
        codes = (normed / row_scale).to(torch.float8_e4m3fnuz)
        return {"codes": codes, "row_scale": row_scale, "stream": stream}
