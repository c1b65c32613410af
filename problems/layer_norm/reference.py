"""LayerNorm over the last dimension with a learned weight and bias.

Semantics (computed in ``ct = promote_types(x.dtype, float32)``):

    mean = mean(x, dim=-1)
    var  = mean((x - mean) ** 2, dim=-1)            # biased (population) variance
    y    = ((x - mean) / sqrt(var + eps) * weight + bias).to(x.dtype)

Inputs:
    x:      [num_tokens, hidden_size], float (bfloat16 / float16 / float32 / float64)
    weight: [hidden_size], same dtype as x
    bias:   [hidden_size], same dtype as x
Output:
    y:      [num_tokens, hidden_size], dtype of x

Init kwargs: hidden_size (int), eps (float, default 1e-5).
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        xf = x.to(ct)
        var, mean = torch.var_mean(xf, dim=-1, correction=0, keepdim=True)
        y = (xf - mean) * torch.rsqrt(var + self.eps) * weight.to(ct) + bias.to(ct)
        return y.to(x.dtype)
