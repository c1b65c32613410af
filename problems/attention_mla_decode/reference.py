"""DeepSeek-style Multi-head Latent Attention (MLA) decode, absorbed form, over a paged latent cache.

Semantics
---------
With the up-projections absorbed into the query and output sides, every head attends over the same
per-token latent vector ``c_t = [c_kv (kv_lora_rank) ; k_rope (rope_dim)]`` (576 = 512 + 64 for
DeepSeek-V2/V3, Kimi-K2). Token position ``t`` of sequence ``b`` lives in physical block
``block_tables[b, t // block_size]`` at slot ``t % block_size`` of ``kv_cache``; block-table entries past
``ceil(seq_lens[b] / block_size)`` and slots at positions ``>= seq_lens[b]`` are padding and must be
ignored. For every sequence ``b`` and head ``h`` (one query token per sequence)::

    s[t]      = softmax_scale * <q[b, h, :], c_t>             over all kv_lora_rank + rope_dim dims
    out[b, h] = sum_{t < seq_lens[b]} softmax_t(s)[t] * c_t[:kv_lora_rank]

Computed in ``torch.promote_types(q.dtype, float32)``; the output is cast back to ``q.dtype``.
``seq_lens[b] >= 1``.

Inputs
------
q             [batch, num_heads, kv_lora_rank + rope_dim]          float (bf16 / fp16 / fp32 / fp64)
kv_cache      [num_blocks, block_size, kv_lora_rank + rope_dim]    same dtype as q (one latent per token,
                                                                    shared by all heads)
block_tables  [batch, max_blocks_per_seq] int32, ids in [0, num_blocks)
seq_lens      [batch] int32, 1 <= seq_lens[b] <= max_blocks_per_seq * block_size

Output
------
out           [batch, num_heads, kv_lora_rank], dtype of q

Init kwargs: num_heads, kv_lora_rank, rope_dim, block_size, softmax_scale (DeepSeek-V3: 192 ** -0.5
times the YaRN mscale**2 = (0.1 * ln(40) + 1) ** 2, i.e. ~0.1352).

Roofline hooks: only the used blocks of the latent cache (ceil(seq_len / block_size) per sequence) are
counted as read, plus q, the used block-table entries and seq_lens; out is written. FLOPs are
2 * heads * sum(seq_lens) * ((kv_lora_rank + rope_dim) + kv_lora_rank).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_heads: int, kv_lora_rank: int, rope_dim: int, block_size: int,
                 softmax_scale: float | None = None):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.rope_dim = rope_dim
        self.block_size = block_size
        self.softmax_scale = (float(softmax_scale) if softmax_scale is not None
                              else (kv_lora_rank + rope_dim) ** -0.5)

    def forward(self, q, kv_cache, block_tables, seq_lens):
        B, H, C = q.shape
        cdt = torch.promote_types(q.dtype, torch.float32)
        T = block_tables.shape[1] * self.block_size
        lat = kv_cache[block_tables.long()].reshape(B, T, C).to(cdt)   # [B, T, C]
        scores = torch.matmul(q.to(cdt), lat.transpose(1, 2)) * self.softmax_scale  # [B, H, T]
        pos = torch.arange(T, device=q.device)
        valid = pos[None, :] < seq_lens.long()[:, None]  # [B, T]
        scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, lat[:, :, : self.kv_lora_rank])  # [B, H, kv_lora_rank]
        return out.to(q.dtype)


def roofline_bytes(inputs, outputs, block_size, **init_kwargs):
    q, kc = inputs["q"], inputs["kv_cache"]
    nb = int(((inputs["seq_lens"].to(torch.int64) + block_size - 1) // block_size).sum())
    read = (q.numel() * q.element_size() + nb * kc[0].numel() * kc.element_size()
            + nb * inputs["block_tables"].element_size()
            + inputs["seq_lens"].numel() * inputs["seq_lens"].element_size())
    out = outputs if isinstance(outputs, torch.Tensor) else outputs[0]
    return int(read), int(out.numel() * out.element_size())


def roofline_flops(inputs, outputs, num_heads, kv_lora_rank, rope_dim, **init_kwargs):
    ctx = int(inputs["seq_lens"].to(torch.int64).sum())
    return 2 * num_heads * ctx * ((kv_lora_rank + rope_dim) + kv_lora_rank)
