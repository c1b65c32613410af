"""The gated delta rule (Gated DeltaNet / Qwen3-Next linear attention): one decode step, or a recurrent update
over several tokens per sequence, with the state in place or returned.

Semantics
---------
Per sequence ``n`` and value head ``h`` (independently), with a recurrent state S of shape [k_dim, v_dim],
for each of the sequence's tokens in order::

    q_n   = l2norm(q) * scale                               (scale defaults to k_dim ** -0.5)
    k_n   = l2norm(k)
    S     = exp(g) * S                                      (g <= 0 is the log decay)
    u     = beta * (v - S^T k_n)                            ([v_dim]; S^T k_n = sum_i S[i, :] * k_n[i])
    S     = S + k_n u^T                                     (rank-1 update, outer product [k_dim, v_dim])
    out   = S^T q_n                                         ([v_dim], uses the updated state)

``l2norm(x)`` is ``x / sqrt(sum(x**2) + 1e-6)``, or ``x / max(sqrt(sum(x**2)), 1e-6)`` with
``l2norm_clamp=True`` (torch's ``F.normalize``); ``use_qk_l2norm=False`` leaves q and k as they are.

Layouts (the suite's shapes use the first, a single decode step with heads already expanded):
- decode: q, k ``[batch, heads, k_dim]``, v ``[batch, heads, v_dim]``, g, beta ``[batch, heads]``;
- tokens: q, k ``[batch, tokens, q_heads, k_dim]``, v ``[batch, tokens, heads, v_dim]``, g, beta
  ``[batch, tokens, heads]``; with ``cu_seqlens`` ([n + 1] int offsets) batch is 1 and the tokens of
  sequence n are ``cu_seqlens[n]:cu_seqlens[n+1]``.
Value head ``h`` reads query/key head ``h // (heads // q_heads)`` (consecutive value heads share one).

Gating: ``g`` and ``beta`` as given, or computed from the model's parameters (when g / beta is None)::

    g    = -exp(A_log[h]) * softplus(a + dt_bias[h])        (softplus with softplus_beta, softplus_threshold)
    beta = sigmoid(b)

State: ``state`` [n, heads, k_dim, v_dim] (zeros when None), or a pool of slots [slots, heads, k_dim, v_dim]
read at ``state_indices[n]`` (an int tensor [n]; every sequence starts from its slot as given, so the slots of
one call should differ). With ``inplace_final_state=True`` the final states are
written back into ``state`` (at the indexed slots; the input is mutated) and ``state`` is returned; with
False, a new tensor is returned: a copy of the pool with the indexed slots updated (the input is read only).

Computed in ``torch.promote_types(q.dtype, float32)`` (fp64 when fed fp64). Returns ``(out, final_state)``:
``out`` like ``v`` in ``q.dtype``, ``final_state`` in the state's dtype.

Inputs (the suite's shapes)
------
q, k   [batch, heads, k_dim]        float (bf16 / fp16 / fp32 / fp64)
v      [batch, heads, v_dim]        same dtype as q
g      [batch, heads]               float32 (fp64 when upcast), log decay, g <= 0
beta   [batch, heads]               float32 (fp64 when upcast), write strength in (0, 1)
state  [batch, heads, k_dim, v_dim] float32 (fp64 when upcast), updated in place

Outputs
-------
(out [batch, heads, v_dim] in q.dtype, state [batch, heads, k_dim, v_dim] -- the mutated input)

Init kwargs: heads, k_dim, v_dim (checked against the tensors when given), scale, use_qk_l2norm,
l2norm_clamp, softplus_beta, softplus_threshold, inplace_final_state.

Roofline hooks: bytes = every input read once + out written + the whole state written back (the generic
count would count the aliased state only once); FLOPs = 7 * k_dim * v_dim per (token, head) (decay, S^T k,
rank-1 update, S^T q) plus the normalisations.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, heads: int | None = None, k_dim: int | None = None, v_dim: int | None = None,
                 scale: float | None = None, use_qk_l2norm: bool = True, l2norm_clamp: bool = False,
                 softplus_beta: float = 1.0, softplus_threshold: float = 20.0, inplace_final_state: bool = True):
        super().__init__()
        self.heads, self.k_dim, self.v_dim = heads, k_dim, v_dim
        self.scale = scale
        self.use_qk_l2norm = bool(use_qk_l2norm)
        self.l2norm_clamp = bool(l2norm_clamp)
        self.softplus_beta = float(softplus_beta)
        self.softplus_threshold = float(softplus_threshold)
        self.inplace_final_state = bool(inplace_final_state)

    def _l2norm(self, x: torch.Tensor) -> torch.Tensor:
        sq = (x * x).sum(-1, keepdim=True)
        if self.l2norm_clamp:
            return x / torch.sqrt(sq).clamp_min(1e-6)
        return x * torch.rsqrt(sq + 1e-6)

    def _gates(self, v, g, beta, A_log, a, dt_bias, b, cdt):
        if g is None:
            x = a.to(cdt) + (dt_bias.to(cdt) if dt_bias is not None else 0.0)
            g = -torch.exp(A_log.to(cdt)) * F.softplus(x, beta=self.softplus_beta, threshold=self.softplus_threshold)
        if beta is None:
            beta = torch.sigmoid(b.to(cdt))
        if g.shape != v.shape[:-1] or beta.shape != v.shape[:-1]:
            raise ValueError(f"gates {tuple(g.shape)}, {tuple(beta.shape)} do not match v {tuple(v.shape)}")
        return g.to(cdt), beta.to(cdt)

    def forward(self, q, k, v, g=None, beta=None, state=None, state_indices=None, A_log=None, a=None,
                dt_bias=None, b=None, cu_seqlens=None):
        decode = q.dim() == 3
        if decode:  # one token: [batch, heads, dim] -> [batch, 1, heads, dim]
            q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
            g, beta, a, b = (t.unsqueeze(1) if t is not None else None for t in (g, beta, a, b))
        batch, tokens, q_heads, k_dim = q.shape
        heads, v_dim = v.shape[-2], v.shape[-1]
        if k.shape != q.shape or v.shape[:2] != q.shape[:2] or heads % q_heads:
            raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not fit")
        if any(want is not None and want != got for want, got in
               ((self.heads, heads), (self.k_dim, k_dim), (self.v_dim, v_dim))):
            raise ValueError(f"init sizes {(self.heads, self.k_dim, self.v_dim)} differ from the tensors'")
        cdt = torch.promote_types(q.dtype, torch.float32)
        g, beta = self._gates(v, g, beta, A_log, a, dt_bias, b, cdt)
        if cu_seqlens is not None:
            if batch != 1:
                raise ValueError("with cu_seqlens the batch axis holds one packed batch")
            bounds = [int(x) for x in cu_seqlens.tolist()]
            if bounds[0] != 0 or bounds[-1] != tokens or any(e < s for s, e in zip(bounds, bounds[1:])):
                raise ValueError(f"cu_seqlens {bounds} do not cover {tokens} tokens")
            spans = [(0, s, e) for s, e in zip(bounds[:-1], bounds[1:])]
        else:
            spans = [(n, 0, tokens) for n in range(batch)]
        group = heads // q_heads
        qf = q.to(cdt).repeat_interleave(group, dim=2)
        kf = k.to(cdt).repeat_interleave(group, dim=2)
        if self.use_qk_l2norm:
            qf, kf = self._l2norm(qf), self._l2norm(kf)
        qf = qf * (self.scale if self.scale is not None else k_dim ** -0.5)
        vf = v.to(cdt)
        rows = (state_indices.to(torch.long).tolist() if state_indices is not None else list(range(len(spans))))
        if len(rows) != len(spans):
            raise ValueError(f"{len(rows)} state rows for {len(spans)} sequences")
        if state is None:
            final = torch.zeros(len(spans), heads, k_dim, v_dim, dtype=torch.float32, device=q.device)
        else:
            if state.shape[1:] != (heads, k_dim, v_dim) or (state_indices is None and state.shape[0] != len(spans)):
                raise ValueError(f"state {tuple(state.shape)} does not fit {len(spans)} x {(heads, k_dim, v_dim)}")
            final = state if self.inplace_final_state else state.clone()
        initial = [final[row].to(cdt) for row in rows]  # every sequence starts from the slot as it was given
        out = torch.empty(v.shape, dtype=q.dtype, device=q.device)
        for (n, start, end), row, S in zip(spans, rows, initial):                  # S: [H, K, V]
            for t in range(start, end):
                S = S * torch.exp(g[n, t])[:, None, None]
                kv_mem = torch.einsum("hk,hkv->hv", kf[n, t], S)
                u = (vf[n, t] - kv_mem) * beta[n, t][:, None]
                S = S + kf[n, t][:, :, None] * u[:, None, :]
                out[n, t] = torch.einsum("hk,hkv->hv", qf[n, t], S).to(q.dtype)
            final[row] = S.to(final.dtype)
        return (out.squeeze(1) if decode else out), final


def roofline_bytes(inputs, outputs, **init_kwargs):
    read = sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))
    out, st = outputs[0], outputs[1]
    return int(read), int(out.numel() * out.element_size() + st.numel() * st.element_size())


def roofline_flops(inputs, outputs, **init_kwargs):
    v, k = inputs["v"], inputs["k"]
    token_heads = v.numel() // v.shape[-1]
    k_dim, v_dim = k.shape[-1], v.shape[-1]
    return int(token_heads * (7 * k_dim * v_dim + 6 * k_dim + 3 * v_dim))
