"""Causal self-attention over packed variable-length sequences (prefill), with grouped-query attention.

Semantics
---------
The batch is a concatenation of ``batch`` independent sequences; sequence ``b`` occupies rows
``cu_seqlens[b]:cu_seqlens[b+1]`` of ``q``, ``k`` and ``v``. Tokens attend only inside their own sequence
and causally (token ``i`` of a sequence sees tokens ``0..i`` of that sequence, the diagonal included).
Query head ``h`` uses key/value head ``h // (num_heads // num_kv_heads)`` (consecutive query heads share a
KV head, as in Llama/Qwen GQA). For every sequence and head::

    out[i] = sum_{j <= i} softmax_j(softmax_scale * <q[i], k[j]>) * v[j]

The softmax is computed in ``torch.promote_types(q.dtype, float32)`` (fp32 for bf16/fp16 inputs, fp64
when fed fp64) and the result is cast back to ``q.dtype``.

Inputs
------
q           [total_tokens, num_heads, head_dim]     float (bf16 / fp16 / fp32 / fp64)
k, v        [total_tokens, num_kv_heads, head_dim]  same dtype as q
cu_seqlens  [batch + 1] int32, cu_seqlens[0] == 0, non-decreasing, cu_seqlens[-1] == total_tokens

Output
------
out         [total_tokens, num_heads, head_dim], dtype of q

Init kwargs: num_heads, num_kv_heads (divides num_heads), head_dim, softmax_scale (float, usually
head_dim ** -0.5).

Roofline: ``roofline_flops`` counts only the causal half (the two matmuls, 2*2*heads*head_dim*L*(L+1)/2
per sequence); bytes use the generic count (q, k, v, cu_seqlens read once, out written once).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, softmax_scale: float | None = None):
        super().__init__()
        assert num_heads % num_kv_heads == 0
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else head_dim ** -0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        group = self.num_heads // self.num_kv_heads
        cdt = torch.promote_types(q.dtype, torch.float32)
        out = torch.empty_like(q)
        bounds = cu_seqlens.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            L = end - start
            if L <= 0:
                continue
            # Process KV-head groups in chunks so that a materialised [heads, L, L] score matrix (the math
            # backend, used e.g. for fp64) stays below ~2^30 elements.
            kv_chunk = max(1, min(self.num_kv_heads, (1 << 30) // (group * L * L)))
            for h0 in range(0, self.num_kv_heads, kv_chunk):
                h1 = min(h0 + kv_chunk, self.num_kv_heads)
                # [L, H, D] -> [H, L, D]
                qs = q[start:end, h0 * group:h1 * group].to(cdt).transpose(0, 1)
                ks = k[start:end, h0:h1].to(cdt).repeat_interleave(group, dim=1).transpose(0, 1)
                vs = v[start:end, h0:h1].to(cdt).repeat_interleave(group, dim=1).transpose(0, 1)
                os_ = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=self.softmax_scale)
                out[start:end, h0 * group:h1 * group] = os_.transpose(0, 1).to(q.dtype)
        return out


def roofline_flops(inputs, outputs, num_heads, head_dim, **init_kwargs) -> int:
    """QK^T and PV over the causal half only: sum_b 2 * 2 * heads * head_dim * L_b * (L_b + 1) / 2."""
    lens = (inputs["cu_seqlens"][1:] - inputs["cu_seqlens"][:-1]).to(torch.int64).tolist()
    return int(sum(2 * 2 * num_heads * head_dim * L * (L + 1) // 2 for L in lens))
