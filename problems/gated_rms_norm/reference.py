"""Gated RMSNorm (Mamba2 / Qwen3-Next linear-attention output norm), norm BEFORE gate, optionally grouped.

Semantics (computed in ``ct = promote_types(x.dtype, float32)``, one rounding at the end):

    The last dim (hidden_size) is split into hidden_size // group_size contiguous groups;
    each group is RMS-normalised on its own:
        rstd_g = 1 / sqrt(mean(x_g ** 2) + eps)
    y = (x * rstd * weight * silu(z)).to(x.dtype),   silu(z) = z * sigmoid(z)

Only the norm-before-gate variant (normalise x, then multiply by the gate) is modelled; the gate z does NOT
enter the variance. group_size == hidden_size (the default) is the ungrouped norm.

Model mapping:
    * Qwen3-Next Gated DeltaNet output norm: the per-head output [tokens, value_heads, head_v_dim] is viewed as
      rows of head_v_dim=128, so x is [tokens * value_heads, 128] with group_size = hidden_size = 128.
    * Mamba2 (Codestral-Mamba, Nemotron-H): x is [tokens, d_inner], group_size = d_inner // n_groups.

Inputs:
    x:      [num_tokens, hidden_size], float dtype (rows; see mapping above)
    z:      [num_tokens, hidden_size], same dtype (the gate)
    weight: [hidden_size], same dtype
Output:
    y:      [num_tokens, hidden_size], dtype of x

Init kwargs: hidden_size (int), group_size (int or None = hidden_size), eps (float, default 1e-6).
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, group_size: int | None = None, eps: float = 1e-6):
        super().__init__()
        group_size = hidden_size if group_size is None else group_size
        if hidden_size % group_size != 0:
            raise ValueError(f"hidden_size {hidden_size} is not a multiple of group_size {group_size}")
        self.hidden_size = hidden_size
        self.group_size = group_size
        self.eps = eps

    def forward(self, x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        shape = x.shape
        xg = x.to(ct).reshape(*shape[:-1], shape[-1] // self.group_size, self.group_size)
        var = xg.square().mean(dim=-1, keepdim=True)
        xn = (xg * torch.rsqrt(var + self.eps)).reshape(shape)
        zf = z.to(ct)
        y = xn * weight.to(ct) * (zf * torch.sigmoid(zf))
        return y.to(x.dtype)
