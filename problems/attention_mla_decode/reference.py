"""DeepSeek-style Multi-head Latent Attention (MLA) decode, absorbed form, over a paged or packed latent cache.

Semantics
---------
With the up-projections absorbed into the query and output sides, every head attends over the same
per-token latent vector ``c_t = [c_kv (kv_lora_rank) ; k_rope (rope_dim)]`` (576 = 512 + 64 for
DeepSeek-V2/V3, Kimi-K2). The latent rows of sequence ``b`` are
- paged (``block_tables`` given): token position ``t`` lives in physical block ``block_tables[b, t //
  block_size]`` at slot ``t % block_size`` of ``kv_cache``; block-table entries past ``ceil(seq_lens[b] /
  block_size)`` and slots at positions ``>= seq_lens[b]`` are padding and must be ignored;
- packed (no block table): rows ``start_b : start_b + seq_lens[b]`` of ``kv_cache``, where ``start_b`` is
  ``cu_seqlens_k[b]`` when given, else the sum of ``seq_lens`` before ``b`` (the sequences one after
  another); without ``seq_lens`` the length is ``cu_seqlens_k[b + 1] - cu_seqlens_k[b]``.
For every sequence ``b`` and head ``h`` (one query token per sequence)::

    s[t]      = softmax_scale * <q[b, h, :], c_t>             over all kv_lora_rank + rope_dim dims
    out[b, h] = sum_{t < seq_lens[b]} softmax_t(s)[t] * c_t[:kv_lora_rank]

Computed in ``torch.promote_types(q.dtype, float32)``; the output is cast back to ``q.dtype``.
``seq_lens[b] >= 1``.

Inputs (the suite's shapes use the paged form)
------
q             [batch, num_heads, kv_lora_rank + rope_dim]          float (bf16 / fp16 / fp32 / fp64)
kv_cache      paged [num_blocks, block_size, (1,) kv_lora_rank + rope_dim], packed [total_tokens, (1,)
              kv_lora_rank + rope_dim]; same dtype as q (one latent per token, shared by all heads; the
              optional axis is the single latent head)
block_tables  optional [batch, max_blocks_per_seq] int32, ids in [0, num_blocks)
seq_lens      [batch] int32, 1 <= seq_lens[b] (<= max_blocks_per_seq * block_size when paged); optional
              when packed with cu_seqlens_k
cu_seqlens_k  optional [batch + 1] int32, the packed sequences' first rows (entry batch is read only
              without seq_lens)

Output
------
out           [batch, num_heads, kv_lora_rank], dtype of q

Init kwargs, each optional and read from the tensors (given ones must agree): num_heads (q's axis 1),
kv_lora_rank and rope_dim (they sum to the latent width; with neither given rope_dim is 64, DeepSeek's
qk_rope_head_dim), block_size (the paged cache's axis 1; none for a packed cache), softmax_scale (default
(kv_lora_rank + rope_dim) ** -0.5, scaled dot-product attention's convention over the latent; DeepSeek-V3:
192 ** -0.5 times the YaRN mscale**2 = (0.1 * ln(40) + 1) ** 2, i.e. ~0.1352).

Roofline hooks: only the used rows of the latent cache are counted as read (paged: the used blocks,
ceil(seq_len / block_size) per sequence, plus their block-table entries; packed: seq_len rows per sequence),
plus q, seq_lens and cu_seqlens_k; out is written. FLOPs are
2 * heads * sum(seq_lens) * ((kv_lora_rank + rope_dim) + kv_lora_rank).
"""

import torch
import torch.nn as nn


DEFAULT_ROPE_DIM = 64


def _sizes(q, kv_cache, block_tables, num_heads, kv_lora_rank, rope_dim, block_size):
    """(heads, kv_lora_rank, rope_dim, block_size or None) from the tensors; given sizes must agree."""
    width = q.shape[-1]
    if kv_cache.shape[-1] != width:
        raise ValueError(f"q's last axis ({width}) and the latent cache's ({kv_cache.shape[-1]}) disagree")
    rope = rope_dim if rope_dim is not None else (width - kv_lora_rank if kv_lora_rank is not None
                                                  else DEFAULT_ROPE_DIM)
    found = (q.shape[1], width - rope, rope)
    given = (num_heads, kv_lora_rank, rope_dim)
    if any(g is not None and g != a for g, a in zip(given, found)) or not 0 < rope < width:
        raise ValueError(f"init sizes {given} disagree with the tensors' {found}")
    lead = 2 if block_tables is not None else 1
    if kv_cache.dim() not in (lead + 1, lead + 2) or (kv_cache.dim() == lead + 2 and kv_cache.shape[-2] != 1):
        raise ValueError(f"latent cache of shape {list(kv_cache.shape)}: paged [blocks, block_size, (1,) width] "
                         "or packed [tokens, (1,) width]")
    if block_tables is None:
        if block_size is not None:
            raise ValueError("block_size is given but the cache is packed (no block table)")
        return (*found, None)
    if block_size is not None and block_size != kv_cache.shape[1]:
        raise ValueError(f"block_size {block_size} disagrees with the cache's {kv_cache.shape[1]}")
    return (*found, kv_cache.shape[1])


def _packed_rows(seq_lens, cu_seqlens_k):
    """(first row, length) of each sequence of a packed cache."""
    if cu_seqlens_k is not None:
        cu = cu_seqlens_k.long()
        lens = seq_lens.long() if seq_lens is not None else cu[1:] - cu[:-1]
        return cu[: lens.shape[0]], lens
    lens = seq_lens.long()
    return torch.cumsum(lens, 0) - lens, lens


class Model(nn.Module):
    def __init__(self, num_heads: int | None = None, kv_lora_rank: int | None = None, rope_dim: int | None = None,
                 block_size: int | None = None, softmax_scale: float | None = None):
        super().__init__()
        self.num_heads, self.kv_lora_rank, self.rope_dim, self.block_size = num_heads, kv_lora_rank, rope_dim, \
            block_size
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else None

    def forward(self, q, kv_cache, block_tables=None, seq_lens=None, cu_seqlens_k=None):
        B, H, C = q.shape
        _, rank, rope, block_size = _sizes(q, kv_cache, block_tables, self.num_heads, self.kv_lora_rank,
                                           self.rope_dim, self.block_size)
        scale = self.softmax_scale if self.softmax_scale is not None else (rank + rope) ** -0.5
        cdt = torch.promote_types(q.dtype, torch.float32)
        if block_tables is not None:
            if seq_lens is None:
                raise ValueError("a paged cache needs seq_lens")
            T = block_tables.shape[1] * block_size
            lat = kv_cache[block_tables.long()].reshape(B, T, C).to(cdt)   # [B, T, C]
            lens = seq_lens.long()
        else:
            if seq_lens is None and cu_seqlens_k is None:
                raise ValueError("a packed cache needs seq_lens or cu_seqlens_k")
            starts, lens = _packed_rows(seq_lens, cu_seqlens_k)
            rows = kv_cache.reshape(kv_cache.shape[0], C)
            T = max(int(lens.max()), 1) if B else 1
            idx = (starts[:, None] + torch.arange(T, device=q.device)[None, :]).clamp(0, rows.shape[0] - 1)
            lat = rows[idx].to(cdt)                                         # [B, T, C]
        scores = torch.matmul(q.to(cdt), lat.transpose(1, 2)) * scale  # [B, H, T]
        pos = torch.arange(T, device=q.device)
        valid = pos[None, :] < lens[:, None]  # [B, T]
        scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, lat[:, :, :rank])  # [B, H, kv_lora_rank]
        return out.to(q.dtype)


def _latent_rows_read(inputs):
    """Latent rows a kernel must read (paged: whole used blocks) and block-table entries it must read."""
    lens = (inputs["seq_lens"].to(torch.int64) if inputs.get("seq_lens") is not None
            else torch.diff(inputs["cu_seqlens_k"].to(torch.int64)))
    bt = inputs.get("block_tables")
    if bt is None:
        return int(lens.sum()), 0
    block_size = inputs["kv_cache"].shape[1]
    nb = int(((lens + block_size - 1) // block_size).sum())
    return nb * block_size, nb


def roofline_bytes(inputs, outputs, **init_kwargs):
    q, kc = inputs["q"], inputs["kv_cache"]
    rows, entries = _latent_rows_read(inputs)
    read = q.numel() * q.element_size() + rows * kc.shape[-1] * kc.element_size()
    if entries:
        read += entries * inputs["block_tables"].element_size()
    for name in ("seq_lens", "cu_seqlens_k"):
        if inputs.get(name) is not None:
            read += inputs[name].numel() * inputs[name].element_size()
    out = outputs if isinstance(outputs, torch.Tensor) else outputs[0]
    return int(read), int(out.numel() * out.element_size())


def roofline_flops(inputs, outputs, **init_kwargs):
    q = inputs["q"]
    heads, width = q.shape[1], q.shape[-1]
    rank = (outputs if isinstance(outputs, torch.Tensor) else outputs[0]).shape[-1]
    lens = (inputs["seq_lens"] if inputs.get("seq_lens") is not None
            else torch.diff(inputs["cu_seqlens_k"]))
    ctx = int(lens.to(torch.int64).sum())
    return 2 * heads * ctx * (width + rank)
