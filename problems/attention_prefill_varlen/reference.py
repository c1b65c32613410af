"""Self-attention over packed variable-length sequences (prefill), with grouped-query attention; causal by
default, keys and values contiguous or in a paged cache.

Semantics
---------
The batch is a concatenation of ``batch`` independent sequences; the queries of sequence ``b`` are rows
``cu_seqlens[b]:cu_seqlens[b+1]`` of ``q`` (``q_len`` of them). Its keys and values (``kv_len`` of them) are
- contiguous (no ``block_table``): rows ``cu_seqlens_k[b]:cu_seqlens_k[b+1]`` of ``k`` and ``v``
  (``cu_seqlens_k`` defaults to ``cu_seqlens``), or the first ``seqused_k[b]`` of those rows when given;
- paged (``block_table`` given): ``k`` and ``v`` are caches ``[num_blocks, block_size, num_kv_heads,
  head_dim]`` and key ``j`` of the sequence is slot ``j % block_size`` of block ``block_table[b, j //
  block_size]``; ``kv_len = seqused_k[b]`` (or the sequence's ``cu_seqlens_k`` length).
Tokens attend only inside their own sequence. Causal (``causal=True``) aligns the mask at the bottom right,
as serving kernels do: query ``i`` sees keys ``j <= i + kv_len - q_len`` (the usual causal mask when the two
lengths are equal; every key for a single query). Query head ``h`` uses key/value head
``h // (num_heads // num_kv_heads)`` (consecutive query heads share a KV head, as in Llama/Qwen GQA)::

    out[i] = sum_{j visible to i} softmax_j(softmax_scale * <q[i], k[j]>) * v[j]

The softmax is computed in ``torch.promote_types(q.dtype, float32)`` (fp32 for bf16/fp16 inputs, fp64
when fed fp64) and the result is cast back to ``q.dtype``.

Inputs (the suite's shapes use the contiguous causal form)
------
q              [total_q, num_heads, head_dim]        float (bf16 / fp16 / fp32 / fp64)
k, v           [total_k, num_kv_heads, head_dim]     same dtype as q (paged: [num_blocks, block_size, kv_heads, d])
cu_seqlens     [batch + 1] int32, cu_seqlens[0] == 0, non-decreasing, cu_seqlens[-1] == total_q
cu_seqlens_k   optional [batch + 1] int32, the keys' offsets (default: cu_seqlens)
seqused_k      optional [batch] int32, keys used per sequence
block_table    optional [batch, max_blocks] int32, the paged cache's blocks of each sequence

Output
------
out         [total_q, num_heads, head_dim], dtype of q

Init kwargs: num_heads, num_kv_heads (divides num_heads), head_dim, softmax_scale (float, default
head_dim ** -0.5), causal (default True).

Roofline: ``roofline_flops`` counts only the causal half (the two matmuls, 2*2*heads*head_dim*L*(L+1)/2
per sequence); bytes use the generic count (q, k, v, cu_seqlens read once, out written once).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, softmax_scale: float | None = None,
                 causal: bool = True):
        super().__init__()
        assert num_heads % num_kv_heads == 0
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else head_dim ** -0.5
        self.causal = bool(causal)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor,
                cu_seqlens_k: torch.Tensor | None = None, seqused_k: torch.Tensor | None = None,
                block_table: torch.Tensor | None = None) -> torch.Tensor:
        group = self.num_heads // self.num_kv_heads
        cdt = torch.promote_types(q.dtype, torch.float32)
        out = torch.empty_like(q)
        bounds = cu_seqlens.tolist()
        k_bounds = (cu_seqlens_k if cu_seqlens_k is not None else cu_seqlens).tolist()
        used = seqused_k.tolist() if seqused_k is not None else None
        for b, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
            q_len = end - start
            kv_len = used[b] if used is not None else k_bounds[b + 1] - k_bounds[b]
            if q_len <= 0:
                continue
            if block_table is not None:
                slots = torch.arange(kv_len, device=k.device)
                blocks = block_table[b].to(torch.long)[slots // k.shape[1]]
                keys, values = k[blocks, slots % k.shape[1]], v[blocks, slots % k.shape[1]]
            else:
                keys = k[k_bounds[b]:k_bounds[b] + kv_len]
                values = v[k_bounds[b]:k_bounds[b] + kv_len]
            mask = None
            if self.causal and q_len != kv_len:  # bottom-right aligned
                rows = torch.arange(q_len, device=q.device)[:, None] + (kv_len - q_len)
                mask = torch.arange(kv_len, device=q.device)[None, :] <= rows
            # Process KV-head groups in chunks so that a materialised [heads, q_len, kv_len] score matrix (the
            # math backend, used e.g. for fp64) stays below ~2^30 elements.
            kv_chunk = max(1, min(self.num_kv_heads, (1 << 30) // max(1, group * q_len * kv_len)))
            for h0 in range(0, self.num_kv_heads, kv_chunk):
                h1 = min(h0 + kv_chunk, self.num_kv_heads)
                # [L, H, D] -> [H, L, D]
                qs = q[start:end, h0 * group:h1 * group].to(cdt).transpose(0, 1)
                ks = keys[:, h0:h1].to(cdt).repeat_interleave(group, dim=1).transpose(0, 1)
                vs = values[:, h0:h1].to(cdt).repeat_interleave(group, dim=1).transpose(0, 1)
                os_ = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask,
                                                     is_causal=self.causal and mask is None,
                                                     scale=self.softmax_scale)
                out[start:end, h0 * group:h1 * group] = os_.transpose(0, 1).to(q.dtype)
        return out


def roofline_flops(inputs, outputs, num_heads, head_dim, **init_kwargs) -> int:
    """QK^T and PV over the causal half only: sum_b 2 * 2 * heads * head_dim * L_b * (L_b + 1) / 2."""
    lens = (inputs["cu_seqlens"][1:] - inputs["cu_seqlens"][:-1]).to(torch.int64).tolist()
    return int(sum(2 * 2 * num_heads * head_dim * L * (L + 1) // 2 for L in lens))
