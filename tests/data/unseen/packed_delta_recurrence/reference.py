"""Made-up test problem: the recurrent gated delta rule as a serving layer calls it.

Sequences are packed along the token axis (`cu_seqlens`); each has a slot in the state cache `ssm_state`
[slots, heads, dim, dim] (`ssm_state_indices`), which the layer updates in place. Per token and value head
h (query/key head h // (heads // key_heads)): decay = exp(-exp(A_log) * softplus(a + dt_bias)),
strength = sigmoid(b), q and k L2-normalised (x * rsqrt(sum x^2 + 1e-6)), q scaled by dim ** -0.5;
S = decay * S; S += k (strength * (v - S^T k))^T; out = S^T q. Returns out only.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, q, k, v, a, b, A_log, dt_bias, ssm_state, ssm_state_indices, cu_seqlens):
        heads, dim = v.shape[2], q.shape[3]
        per_key = heads // q.shape[2]
        out = torch.zeros_like(v)
        bounds = cu_seqlens.tolist()
        for n, slot in enumerate(ssm_state_indices.tolist()):
            S = ssm_state[slot].double()
            for t in range(bounds[n], bounds[n + 1]):
                for h in range(heads):
                    qt, kt = q[0, t, h // per_key].double(), k[0, t, h // per_key].double()
                    qt = qt / torch.sqrt((qt * qt).sum() + 1e-6) * dim ** -0.5
                    kt = kt / torch.sqrt((kt * kt).sum() + 1e-6)
                    rate = torch.exp(A_log[h].double()) * F.softplus(a[0, t, h].double() + dt_bias[h].double())
                    S[h] = S[h] * torch.exp(-rate)
                    delta = torch.sigmoid(b[0, t, h].double()) * (v[0, t, h].double() - kt @ S[h])
                    S[h] = S[h] + torch.outer(kt, delta)
                    out[0, t, h] = (qt @ S[h]).to(v.dtype)
            ssm_state[slot] = S.to(ssm_state.dtype)
        return out
