"""The reference's semantics in a form torch.compile can compile: the packed batch as ONE flex attention call
whose mask keeps every query inside its own sequence (and, causal, at or left of its bottom-right diagonal).

The reference loops over sequences on the host (`cu_seqlens.tolist()`), so dynamo breaks its graph at every
sequence and compiles one SDPA per length. Here the sequence of every query and key row comes from the
offsets on the device (`searchsorted`), and inductor generates one Triton kernel for the whole batch that
skips the key blocks the mask empties. A paged cache is read through its block table as every sequence's
`max_blocks * block_size` slots, the ones past the sequence's length masked. Used only by the torch.compile
baselines, which check it against the reference before timing it.
"""

import torch
import torch.nn as nn
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def _rows(offsets: torch.Tensor, total: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(sequence, position in it) of each of `total` packed rows, from [batch + 1] offsets."""
    index = torch.arange(total, device=offsets.device, dtype=offsets.dtype)
    seq = torch.searchsorted(offsets[1:].contiguous(), index, right=True)
    return seq, (index - offsets[seq]).to(torch.int64)


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

    def forward(self, q, k, v, cu_seqlens, cu_seqlens_k=None, seqused_k=None, block_table=None):
        total_q = q.shape[0]
        batch = cu_seqlens.shape[0] - 1
        cu_k = cu_seqlens_k if cu_seqlens_k is not None else cu_seqlens
        q_len = (cu_seqlens[1:] - cu_seqlens[:-1]).to(torch.int64)
        if block_table is not None:  # every sequence's slots in block-table order; past its length masked
            page = k.shape[1]
            span = block_table.shape[1] * page
            blocks = block_table.to(torch.int64).reshape(-1)
            k = k[blocks].reshape(batch * span, *k.shape[2:])
            v = v[blocks].reshape(batch * span, *v.shape[2:])
            index = torch.arange(batch * span, device=q.device)
            k_seq, k_pos = index // span, index % span
            kv_len = seqused_k.to(torch.int64) if seqused_k is not None else (cu_k[1:] - cu_k[:-1]).to(torch.int64)
        else:
            k_seq, k_pos = _rows(cu_k, k.shape[0])
            kv_len = (seqused_k if seqused_k is not None else cu_k[1:] - cu_k[:-1]).to(torch.int64)
        q_seq, q_pos = _rows(cu_seqlens, total_q)
        shift = kv_len - q_len  # causal: query i sees keys j <= i + shift (bottom-right aligned)
        causal = self.causal

        def visible(b, h, qi, kj):
            same = (q_seq[qi] == k_seq[kj]) & (k_pos[kj] < kv_len[k_seq[kj]])
            if causal:
                same = same & (k_pos[kj] <= q_pos[qi] + shift[q_seq[qi]])
            return same

        mask = create_block_mask(visible, None, None, total_q, k.shape[0], device=q.device)
        # [tokens, heads, d] -> [1, heads, tokens, d]; GQA: query head h reads KV head h // group
        out = flex_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None],
                             block_mask=mask, scale=self.softmax_scale, enable_gqa=self.num_heads != self.num_kv_heads)
        return out[0].transpose(0, 1).to(q.dtype)
