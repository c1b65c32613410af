"""One decode step of the gated delta rule (Gated DeltaNet / Qwen3-Next linear attention).

Semantics
---------
Per sequence ``b`` and head ``h`` (independently), with a recurrent state S of shape [k_dim, v_dim]::

    q_n   = q / sqrt(sum(q**2) + 1e-6) * k_dim ** -0.5      (L2-normalised over k_dim, then scaled)
    k_n   = k / sqrt(sum(k**2) + 1e-6)                      (L2-normalised over k_dim)
    S     = exp(g) * S                                      (g <= 0 is the log decay)
    u     = beta * (v - S^T k_n)                            ([v_dim]; S^T k_n = sum_i S[i, :] * k_n[i])
    S     = S + k_n u^T                                     (rank-1 update, outer product [k_dim, v_dim])
    out   = S^T q_n                                         ([v_dim], uses the updated state)

Heads are already expanded (the model repeats its 16 key heads to the 32 value heads before the kernel),
so q, k, v and the state share one head count. Computed in ``torch.promote_types(q.dtype, state.dtype)``
(fp32 for the model's bf16 activations + fp32 state, fp64 when fed fp64). ``out`` is returned in
``q.dtype``; the new state is written **in place** into ``state`` (listed in ``mutates_inputs``) and
returned as well.

Inputs
------
q, k   [batch, heads, k_dim]        float (bf16 / fp16 / fp32 / fp64)
v      [batch, heads, v_dim]        same dtype as q
g      [batch, heads]               float32 (fp64 when upcast), log decay, g <= 0
beta   [batch, heads]               float32 (fp64 when upcast), write strength in (0, 1)
state  [batch, heads, k_dim, v_dim] float32 (fp64 when upcast), updated in place

Outputs
-------
(out [batch, heads, v_dim] in q.dtype, state [batch, heads, k_dim, v_dim] -- the mutated input)

Init kwargs: heads, k_dim, v_dim.

Roofline hooks: bytes = every input read once + out written + the whole state written back (the generic
count would count the aliased state only once); FLOPs = 7 * k_dim * v_dim per (batch, head) (decay,
S^T k, rank-1 update, S^T q) plus the normalisations.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, heads: int, k_dim: int, v_dim: int):
        super().__init__()
        self.heads = heads
        self.k_dim = k_dim
        self.v_dim = v_dim

    def forward(self, q, k, v, g, beta, state):
        cdt = torch.promote_types(q.dtype, state.dtype)
        qf, kf, vf = q.to(cdt), k.to(cdt), v.to(cdt)
        qf = qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6) * (self.k_dim ** -0.5)
        kf = kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)
        S = state.to(cdt) * torch.exp(g.to(cdt))[..., None, None]           # [B, H, K, V]
        kv_mem = torch.matmul(kf.unsqueeze(-2), S).squeeze(-2)              # [B, H, V]
        u = (vf - kv_mem) * beta.to(cdt)[..., None]
        S = S + kf.unsqueeze(-1) * u.unsqueeze(-2)
        out = torch.matmul(qf.unsqueeze(-2), S).squeeze(-2)                 # [B, H, V]
        state.copy_(S)
        return out.to(q.dtype), state


def roofline_bytes(inputs, outputs, **init_kwargs):
    read = sum(t.numel() * t.element_size() for t in inputs.values())
    out, st = outputs[0], inputs["state"]
    return int(read), int(out.numel() * out.element_size() + st.numel() * st.element_size())


def roofline_flops(inputs, outputs, heads, k_dim, v_dim, **init_kwargs):
    bh = inputs["q"].shape[0] * heads
    return int(bh * (7 * k_dim * v_dim + 6 * k_dim + 3 * v_dim))
