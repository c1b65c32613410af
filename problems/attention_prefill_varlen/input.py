"""Inputs for attention_prefill_varlen: packed q/k/v and cu_seqlens.

Sequence lengths are a fixed function of (num_seqs, max_seqlen): a ramp
L_b = ceil(max_seqlen * (b + 1) / num_seqs), b = 0..num_seqs-1 (so the longest is max_seqlen and the
total work does not depend on the seed); only their order is shuffled with the global RNG.
"""

import torch


def seq_lens_for(num_seqs: int, max_seqlen: int) -> list[int]:
    return [max(1, -(-max_seqlen * (b + 1) // num_seqs)) for b in range(num_seqs)]


def _make_inputs(num_seqs: int, max_seqlen: int, num_heads: int, num_kv_heads: int, head_dim: int,
                 dtype: str = "bfloat16", device: str = "cuda") -> dict[str, torch.Tensor]:
    dt = getattr(torch, dtype)
    lens = torch.tensor(seq_lens_for(num_seqs, max_seqlen), dtype=torch.int64)
    lens = lens[torch.randperm(num_seqs)]
    cu = torch.zeros(num_seqs + 1, dtype=torch.int64)
    cu[1:] = torch.cumsum(lens, 0)
    total = int(cu[-1])
    q = torch.randn(total, num_heads, head_dim, device=device, dtype=dt)
    k = torch.randn(total, num_kv_heads, head_dim, device=device, dtype=dt)
    v = torch.randn(total, num_kv_heads, head_dim, device=device, dtype=dt)
    return {"q": q, "k": k, "v": v, "cu_seqlens": cu.to(device=device, dtype=torch.int32)}
