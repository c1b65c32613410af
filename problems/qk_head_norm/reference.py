"""Qwen3-style per-head RMSNorm of queries and keys (applied after the QKV projection, before RoPE).

Semantics (computed in ``ct = promote_types(q.dtype, float32)``, one rounding at the end), independently
for every (token, head) vector of length head_dim:

    q_out[t, h] = (q[t, h] / sqrt(mean(q[t, h] ** 2) + eps) * q_weight).to(q.dtype)
    k_out[t, h] = (k[t, h] / sqrt(mean(k[t, h] ** 2) + eps) * k_weight).to(k.dtype)

Inputs:
    q:        [num_tokens, num_q_heads, head_dim], float dtype; or [num_tokens, num_q_heads * head_dim] (the
              heads flattened per token, as a projection writes them: each head_dim-long run is a head)
    k:        [num_tokens, num_kv_heads, head_dim] or [num_tokens, num_kv_heads * head_dim], same dtype
    q_weight: [head_dim], same dtype (shared by all query heads)
    k_weight: [head_dim], same dtype (shared by all key heads)
Outputs (tuple, new tensors; inputs are not mutated):
    q_out: shaped like q, dtype of q
    k_out: shaped like k, dtype of k

Init kwargs: head_dim (int), eps (float, default 1e-6).
"""

import torch
from torch import nn


def _head_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, head_dim: int) -> torch.Tensor:
    ct = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(ct).unflatten(-1, (-1, head_dim))  # [..., heads, head_dim] (heads = 1 when already split)
    var = xf.square().mean(dim=-1, keepdim=True)
    return (xf * torch.rsqrt(var + eps) * weight.to(ct)).to(x.dtype).reshape(x.shape)


class Model(nn.Module):
    def __init__(self, head_dim: int, eps: float = 1e-6):
        super().__init__()
        self.head_dim = head_dim
        self.eps = eps

    def forward(self, q: torch.Tensor, k: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor):
        return (_head_rms_norm(q, q_weight, self.eps, self.head_dim),
                _head_rms_norm(k, k_weight, self.eps, self.head_dim))
