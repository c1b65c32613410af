import torch


def _make_inputs(num_tokens: int, num_seqs: int, num_kv_heads: int, head_dim: int, block_size: int,
                 num_blocks: int, num_padding: int = 0, dtype: str = "bfloat16", device: str = "cuda"):
    """A serving step: `num_tokens - num_padding` real tokens split over `num_seqs` sequences (one each
    when num_seqs equals the real token count, i.e. decode), followed by `num_padding` padding tokens
    (slot -1, as in a CUDA-graph-padded batch). Each sequence owns disjoint, randomly placed blocks of
    the pool (a random block table) and already holds a random number of cached tokens; its new tokens
    take the next consecutive positions. Caches hold random prior contents.
    (num_padding and num_seqs are clamped so that at least one real token per sequence exists.)"""
    dt = getattr(torch, dtype)
    num_padding = max(0, min(num_padding, num_tokens - 1))
    real = num_tokens - num_padding
    num_seqs = max(1, min(num_seqs, real))
    # Split the real tokens over the sequences (each gets >= 1).
    cuts = torch.randperm(real - 1)[: num_seqs - 1].sort().values + 1
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), cuts, torch.tensor([real])])
    new_lens = bounds[1:] - bounds[:-1]                                      # [num_seqs]

    # Blocks per sequence: enough for its new tokens, plus an equal share of the rest of the pool for
    # already-cached context.
    need = (new_lens + block_size - 1) // block_size
    spare = num_blocks - int(need.sum())
    if spare < 0:
        raise ValueError(f"cache pool of {num_blocks} blocks too small for {real} tokens in {num_seqs} sequences")
    owned = need + spare // num_seqs
    first_block = torch.cumsum(owned, 0) - owned
    perm = torch.randperm(num_blocks)

    slot_parts = []
    for s in range(num_seqs):  # loop over sequences, vectorised within each
        n_new, n_own = int(new_lens[s]), int(owned[s])
        table = perm[int(first_block[s]):int(first_block[s]) + n_own]
        ctx = int(torch.randint(0, n_own * block_size - n_new + 1, (1,)))
        pos = torch.arange(ctx, ctx + n_new)
        slot_parts.append(table[pos // block_size] * block_size + pos % block_size)
    slot_parts.append(torch.full((num_padding,), -1, dtype=torch.long))
    slot_mapping = torch.cat(slot_parts).to(device=device, dtype=torch.int64)

    shape_new = (num_tokens, num_kv_heads, head_dim)
    shape_cache = (num_blocks, block_size, num_kv_heads, head_dim)
    return {
        "key": torch.randn(shape_new, device=device, dtype=dt),
        "value": torch.randn(shape_new, device=device, dtype=dt),
        "key_cache": torch.randn(shape_cache, device=device, dtype=dt),
        "value_cache": torch.randn(shape_cache, device=device, dtype=dt),
        "slot_mapping": slot_mapping,
    }
