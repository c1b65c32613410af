"""The reference's semantics in a form torch.compile can trace: every sequence of the batch at once.

The reference walks the batch in a Python loop, which dynamo unrolls: at 512 sequences inductor was still
compiling after 400 s (H200, 2026-12-03). Here the sequences are one batched tensor program and only the
tokens are walked (one, for a decode step). Packed batches (`cu_seqlens`) keep the reference's loop. Used only
by the torch.compile baselines, which check it against the reference before timing it.
"""

import importlib.util
import sys
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location("gated_delta_reference", Path(__file__).with_name("reference.py"))
_reference = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _reference  # dynamo resolves the inherited methods' globals by module name
_spec.loader.exec_module(_reference)


class Model(_reference.Model):
    def forward(self, q, k, v, g=None, beta=None, state=None, state_indices=None, A_log=None, a=None,
                dt_bias=None, b=None, cu_seqlens=None):
        if cu_seqlens is not None:
            return super().forward(q, k, v, g, beta, state, state_indices, A_log, a, dt_bias, b, cu_seqlens)
        decode = q.dim() == 3
        if decode:
            q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
            g, beta, a, b = (t.unsqueeze(1) if t is not None else None for t in (g, beta, a, b))
        batch, tokens, q_heads, k_dim = q.shape
        heads, v_dim = v.shape[-2], v.shape[-1]
        cdt = torch.promote_types(q.dtype, torch.float32)
        g, beta = self._gates(v, g, beta, A_log, a, dt_bias, b, cdt)
        group = heads // q_heads
        qf = q.to(cdt).repeat_interleave(group, dim=2)
        kf = k.to(cdt).repeat_interleave(group, dim=2)
        if self.use_qk_l2norm:
            qf, kf = self._l2norm(qf), self._l2norm(kf)
        qf = qf * (self.scale if self.scale is not None else k_dim ** -0.5)
        vf = v.to(cdt)
        if state is None:
            final = torch.zeros(batch, heads, k_dim, v_dim, dtype=torch.float32, device=q.device)
        else:
            final = state if self.inplace_final_state else state.clone()
        rows = state_indices.to(torch.long) if state_indices is not None else None
        S = (final[rows] if rows is not None else final).to(cdt)  # [B, H, K, V]
        outs = []
        for t in range(tokens):
            S = S * torch.exp(g[:, t])[..., None, None]
            kv_mem = torch.einsum("bhk,bhkv->bhv", kf[:, t], S)
            u = (vf[:, t] - kv_mem) * beta[:, t][..., None]
            S = S + kf[:, t][..., :, None] * u[..., None, :]
            outs.append(torch.einsum("bhk,bhkv->bhv", qf[:, t], S).to(q.dtype))
        out = torch.stack(outs, dim=1)
        if rows is not None:
            final[rows] = S.to(final.dtype)
        else:
            final.copy_(S.to(final.dtype))
        return (out.squeeze(1) if decode else out), final
