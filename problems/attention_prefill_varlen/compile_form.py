"""The reference's semantics in a form torch.compile compiles in bounded time: every sequence padded into one
batch and one masked attention call, instead of one attention call per sequence.

The reference reads the offsets on the host and loops over the sequences in Python, one attention call of its
own size each; compiling it, both compile peers in one worker ran three of five shapes of 4-32 sequences past the
evaluator's 200 s a shape (H100, torch 2.11, 2026-12-06; one and two sequences took well under). Here the batch is
[sequences, longest query, longest key] with a mask that keeps each query's own keys (its sequence's first
kv_len, and bottom-right causal when asked), so a shape is one graph. Padded queries are computed and dropped;
the work grows with the batch's unevenness, which is the price of this form, not of the reference. 16-bit inputs
go to the attention call as they are (its kernels keep the softmax and the sums in fp32, as the reference's
upcast does), as an engineer would call it. Compiled on an H100 (torch 2.11): 4 sequences of 4096 tokens 3.74 ms
in 16-bit, 28.8 ms when upcast to fp32 first; the five full shapes 0.94-7.8 ms (the KB kernel 3.5-5.7x faster:
the mask keeps the attention call from skipping the padded and causal halves). Used only by the torch.compile
baselines, which check it against the reference before timing it.
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
        # 16-bit inputs as they are: the fused attention kernels accumulate in fp32 themselves
        cdt = q.dtype if q.dtype in (torch.float16, torch.bfloat16) else torch.promote_types(q.dtype, torch.float32)
        cu_k = cu_seqlens_k if cu_seqlens_k is not None else cu_seqlens
        q_lens = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
        kv_lens = (seqused_k if seqused_k is not None else cu_k[1:] - cu_k[:-1]).long()
        total = q.shape[0]
        if q_lens.numel() == 0 or total == 0:
            return torch.zeros_like(q)
        longest_q, longest_k = int(q_lens.max()), max(int(kv_lens.max()), 1)  # one graph per (longest_q, longest_k)
        i = torch.arange(longest_q, device=q.device)
        j = torch.arange(longest_k, device=q.device)
        q_ok = i[None, :] < q_lens[:, None]  # [B, Lq]
        k_ok = j[None, :] < kv_lens[:, None]  # [B, Lk]
        q_rows = torch.where(q_ok, cu_seqlens[:-1].long()[:, None] + i[None, :], total)  # padding: row `total`
        if block_table is not None:  # key j of sequence b: slot j % page of block block_table[b, j // page]
            page = k.shape[1]
            cols = (j // page).clamp(max=block_table.shape[1] - 1)
            blocks = torch.where(k_ok, block_table.long()[:, cols], 0)
            keys, values = k[blocks, j % page], v[blocks, j % page]  # [B, Lk, KVH, D]
        else:
            k_rows = torch.where(k_ok, cu_k[:-1].long()[:, None] + j[None, :], 0)
            keys, values = k[k_rows], v[k_rows]
        visible = k_ok[:, None, :]  # [B, Lq, Lk]
        if self.causal:  # bottom-right aligned: query i sees keys j <= i + kv_len - q_len
            visible = visible & (j[None, None, :] <= i[None, :, None] + (kv_lens - q_lens)[:, None, None])
        qs = q[q_rows.clamp(max=total - 1)].to(cdt).transpose(1, 2)  # [B, H, Lq, D]
        ks = keys.to(cdt).repeat_interleave(group, dim=2).transpose(1, 2)
        vs = values.to(cdt).repeat_interleave(group, dim=2).transpose(1, 2)
        o = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=visible[:, None], scale=self.softmax_scale)
        # every padded query lands on one spare row past the end (no data-dependent shapes to compile)
        out = q.new_zeros((total + 1, *q.shape[1:]))
        out[q_rows] = o.transpose(1, 2).to(q.dtype)
        return out[:total]
