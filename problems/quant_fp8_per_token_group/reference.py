"""Dynamic per-token-group FP8 (e4m3fn) quantisation of activations (DeepSeek-V3-style 1 x 128 blocks).

The last dim is split into contiguous groups of ``group_size``. Per token t and group g
(computed in ``ct = promote_types(x.dtype, float32)``):

    amax[t, g]  = max(max_{j in g} |x[t, j]|, 1e-10)        # floor keeps all-zero groups finite
    scale[t, g] = amax[t, g] / 448                          # 448 = largest finite float8_e4m3fn
    q[t, j]     = clamp(x[t, j] / scale[t, g], -448, 448) rounded to float8_e4m3fn (round to nearest even)

As in quant_fp8_per_token, q may differ from a reciprocal-multiply implementation by one fp8 ulp on
rounding midpoints (admitted by the tolerance). Scales are returned row-major ([T, G] contiguous); the
column-major (transposed) scale layout some GEMMs want is not part of this problem.

Inputs:
    x:     [num_tokens, hidden_size], bfloat16 / float16 / float32; hidden_size % group_size == 0
Outputs (tuple):
    q:     [num_tokens, hidden_size], torch.float8_e4m3fn
    scale: [num_tokens, hidden_size // group_size], torch.float32

Init kwargs: group_size (int, default 128).
"""

import torch
from torch import nn

FP8_MAX = 448.0
AMAX_FLOOR = 1e-10


class Model(nn.Module):
    def __init__(self, group_size: int = 128):
        super().__init__()
        self.group_size = group_size

    def forward(self, x: torch.Tensor):
        ct = torch.promote_types(x.dtype, torch.float32)
        t, h = x.shape
        if h % self.group_size != 0:
            raise ValueError(f"hidden_size {h} is not a multiple of group_size {self.group_size}")
        xg = x.to(ct).reshape(t, h // self.group_size, self.group_size)
        amax = xg.abs().amax(dim=-1, keepdim=True).clamp(min=AMAX_FLOOR)
        scale = amax / FP8_MAX
        q = (xg / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).reshape(t, h)
        return q, scale.squeeze(-1).to(torch.float32)
