"""Single-query (decode) GQA attention over a paged KV cache.

Semantics
---------
Each of the ``batch`` sequences has one new query token and ``seq_lens[b]`` cached tokens. Token position
``t`` of sequence ``b`` lives in physical block ``block_tables[b, t // block_size]`` at slot
``t % block_size`` of ``key_cache`` / ``value_cache``. Entries of ``block_tables`` beyond
``ceil(seq_lens[b] / block_size)`` and slots at positions ``>= seq_lens[b]`` are padding: they hold valid
block ids / arbitrary data and must not influence the result. Query head ``h`` uses KV head
``h // (num_heads // num_kv_heads)``. For every sequence and head::

    out[b, h] = sum_{t < seq_lens[b]} softmax_t(softmax_scale * <q[b, h], K_b[t]>) * V_b[t]

(no causal mask beyond the length: the query is the last token, all cached tokens are visible). Computed in
``torch.promote_types(q.dtype, float32)``; the output is cast back to ``q.dtype``. ``seq_lens[b] >= 1``.

Inputs
------
q             [batch, num_heads, head_dim]                         float (bf16 / fp16 / fp32 / fp64)
key_cache     [num_blocks, block_size, num_kv_heads, head_dim]     same dtype as q
value_cache   [num_blocks, block_size, num_kv_heads, head_dim]     same dtype as q
              (or the split layout of vLLM's paged-attention kernels, told apart by the key cache's rank:
              key_cache [num_blocks, num_kv_heads, head_dim / x, block_size, x], value_cache
              [num_blocks, num_kv_heads, head_dim, block_size])
block_tables  [batch, max_blocks_per_seq] int32, ids in [0, num_blocks)
seq_lens      [batch] int32, 1 <= seq_lens[b] <= max_blocks_per_seq * block_size

Output
------
out           [batch, num_heads, head_dim], dtype of q

Init kwargs: num_heads, num_kv_heads, head_dim, block_size (each optional: read from the tensors, and when
given they must agree with them), softmax_scale (default head_dim ** -0.5).

Roofline hooks: only the blocks actually used (ceil(seq_len / block_size) per sequence) of both caches are
counted as read, plus q, the used block-table entries and seq_lens; out is written. FLOPs are the two
matmuls over the real context (2 * 2 * heads * head_dim * sum(seq_lens)).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_heads: int | None = None, num_kv_heads: int | None = None, head_dim: int | None = None,
                 block_size: int | None = None, softmax_scale: float | None = None):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim, self.block_size = num_heads, num_kv_heads, head_dim, \
            block_size
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else None

    def forward(self, q, key_cache, value_cache, block_tables, seq_lens):
        if key_cache.dim() == 5:  # vLLM's split layout -> [num_blocks, block_size, num_kv_heads, head_dim]
            blocks, heads_kv, d_hi, page, x = key_cache.shape
            key_cache = key_cache.permute(0, 3, 1, 2, 4).reshape(blocks, page, heads_kv, d_hi * x)
            value_cache = value_cache.permute(0, 3, 1, 2)
        B, H, D = q.shape
        block_size, KV = key_cache.shape[1], key_cache.shape[2]
        given = (self.num_heads, self.num_kv_heads, self.head_dim, self.block_size)
        if any(g is not None and g != a for g, a in zip(given, (H, KV, D, block_size))):
            raise ValueError(f"init sizes {given} disagree with the tensors' {(H, KV, D, block_size)}")
        assert H % KV == 0
        G = H // KV
        scale = self.softmax_scale if self.softmax_scale is not None else D ** -0.5
        cdt = torch.promote_types(q.dtype, torch.float32)
        n_blk = block_tables.shape[1]
        T = n_blk * block_size
        idx = block_tables.long()
        # gather every sequence's blocks: [B, n_blk, block_size, KV, D] -> [B, KV, T, D]
        k = key_cache[idx].reshape(B, T, KV, D).transpose(1, 2).to(cdt)
        v = value_cache[idx].reshape(B, T, KV, D).transpose(1, 2).to(cdt)
        qg = q.to(cdt).reshape(B, KV, G, D)
        scores = torch.matmul(qg, k.transpose(-1, -2)) * scale  # [B, KV, G, T]
        pos = torch.arange(T, device=q.device)
        valid = pos[None, :] < seq_lens.long()[:, None]  # [B, T]
        scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, v)  # [B, KV, G, D]
        return out.reshape(B, H, D).to(q.dtype)


def _used_blocks(seq_lens, block_size):
    return ((seq_lens.to(torch.int64) + block_size - 1) // block_size)


def roofline_bytes(inputs, outputs, block_size, **init_kwargs):
    q, kc, vc = inputs["q"], inputs["key_cache"], inputs["value_cache"]
    nb = int(_used_blocks(inputs["seq_lens"], block_size).sum())
    blk_bytes = kc[0].numel() * kc.element_size() + vc[0].numel() * vc.element_size()
    read = (q.numel() * q.element_size() + nb * blk_bytes
            + nb * inputs["block_tables"].element_size()
            + inputs["seq_lens"].numel() * inputs["seq_lens"].element_size())
    out = outputs if isinstance(outputs, torch.Tensor) else outputs[0]
    return int(read), int(out.numel() * out.element_size())


def roofline_flops(inputs, outputs, num_heads, head_dim, **init_kwargs):
    ctx = int(inputs["seq_lens"].to(torch.int64).sum())
    return 2 * 2 * num_heads * head_dim * ctx
