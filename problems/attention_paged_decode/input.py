"""Inputs for attention_paged_decode.

Context lengths are a fixed function of (batch, max_seq_len) -- the ramp
L_b = ceil(max_seq_len * (b + 1) / batch) -- so the work does not depend on the seed; their order, the
block assignment (a random permutation of a pool ~10% larger than needed, so blocks are scattered) and
all values come from the global RNG. Unused block-table entries are 0 (a valid id whose contents must be
ignored); unused cache blocks hold random data too.
"""

import torch


def _make_inputs(batch: int, max_seq_len: int, num_heads: int, num_kv_heads: int, head_dim: int,
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
    q = torch.randn(batch, num_heads, head_dim, device=device, dtype=dt)
    key_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim, device=device, dtype=dt)
    value_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim, device=device, dtype=dt)
    return {"q": q, "key_cache": key_cache, "value_cache": value_cache,
            "block_tables": block_tables.to(device), "seq_lens": lens.to(device=device, dtype=torch.int32)}
