"""Inputs for attention_mla_decode.

Context lengths are the fixed ramp L_b = ceil(max_seq_len * (b + 1) / batch) (work independent of the
seed); their order, the scattered block placement (random permutation of a pool ~10% larger than needed)
and all values come from the global RNG. Unused block-table entries are 0. The latent cache is ~N(0, 1)
(c_kv is RMS-normalised in the model); the absorbed query is ~N(0, 0.25) so that with DeepSeek-V3's
softmax scale the logits have a standard deviation of ~1.6.
"""

import torch


def _make_inputs(batch: int, max_seq_len: int, num_heads: int, kv_lora_rank: int, rope_dim: int,
                 block_size: int, dtype: str = "bfloat16", device: str = "cuda") -> dict[str, torch.Tensor]:
    dt = getattr(torch, dtype)
    lens = torch.tensor([max(1, -(-max_seq_len * (b + 1) // batch)) for b in range(batch)], dtype=torch.int64)
    lens = lens[torch.randperm(batch)]
    nblk = (lens + block_size - 1) // block_size
    max_blocks = -(-max_seq_len // block_size)
    used = int(nblk.sum())
    num_blocks = used + max(1, used // 10)
    perm = torch.randperm(num_blocks)
    block_tables = torch.zeros(batch, max_blocks, dtype=torch.int32)
    off = 0
    for b in range(batch):
        n = int(nblk[b])
        block_tables[b, :n] = perm[off:off + n].to(torch.int32)
        off += n
    C = kv_lora_rank + rope_dim
    q = (torch.randn(batch, num_heads, C, device=device) * 0.5).to(dt)
    kv_cache = torch.randn(num_blocks, block_size, C, device=device, dtype=dt)
    return {"q": q, "kv_cache": kv_cache, "block_tables": block_tables.to(device),
            "seq_lens": lens.to(device=device, dtype=torch.int32)}
