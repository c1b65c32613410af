"""MoE token alignment: group the flattened (token, slot) pairs by expert, pad each group to a multiple
of block_size, and emit the per-block expert id (the schedule consumed by a grouped / fused-MoE GEMM).

Let n = num_tokens * top_k and flat[i] = topk_ids.flatten()[i] (i = t*top_k + j). An id outside
[0, num_experts) (expert parallelism's -1 for an expert of another rank) belongs to no expert: it is dropped.
    count[e]   = #{i : flat[i] == e}
    padded[e]  = ceil(count[e] / block_size) * block_size      (0 for an expert with no token)
    start[e]   = sum_{e' < e} padded[e']                         (experts laid out in increasing id)
Outputs (tuple of three int32 tensors, static shapes):
    sorted_token_ids [max_padded]   positions start[e] .. start[e]+count[e]-1 hold the flat indices i with
                                    flat[i] == e in increasing i (stable); every other position (the
                                    per-expert padding and the unused tail) holds the sentinel n.
    expert_ids       [max_padded // block_size]
                                    block b < num_tokens_post_padded // block_size holds the expert owning
                                    positions [b*block_size, (b+1)*block_size); unused blocks hold -1.
    num_tokens_post_padded [1]      sum_e padded[e]
where the worst case over all routings fixes the buffer length:
    max_padded = ceil((n + min(num_experts, n) * (block_size - 1)) / block_size) * block_size
(at most min(E, n) experts are non-empty, each wastes at most block_size-1 slots).
With exact_sizes=True the buffers have the data-dependent sizes instead: sorted_token_ids
[num_tokens_post_padded], expert_ids [num_tokens_post_padded // block_size] (no unused tail, no -1), as a
reference that concatenates the padded per-expert groups returns them.
With with_counts=True two more int32 outputs follow: count [E] (unpadded) and its offsets [E + 1] (0 first,
the total last). At block_size 1 with exact sizes the outputs are a plain stable sort of the pairs by expert.

Inputs:  topk_ids [num_tokens, top_k] int32 (int64 accepted).
Init kwargs: num_experts (int), block_size (int), exact_sizes (bool, default False: static sizes),
with_counts (bool, default False).
Integer op, no floating-point work.
"""

import torch
import torch.nn as nn


def max_padded_len(num_pairs: int, num_experts: int, block_size: int) -> int:
    bound = num_pairs + min(num_experts, num_pairs) * (block_size - 1)
    return (bound + block_size - 1) // block_size * block_size


class Model(nn.Module):
    def __init__(self, num_experts: int, block_size: int, exact_sizes: bool = False, with_counts: bool = False):
        super().__init__()
        self.num_experts = int(num_experts)
        self.block_size = int(block_size)
        self.exact_sizes = bool(exact_sizes)
        self.with_counts = bool(with_counts)

    def forward(self, topk_ids: torch.Tensor):
        E, bs = self.num_experts, self.block_size
        dev = topk_ids.device
        flat = topk_ids.reshape(-1).to(torch.int64)
        n = flat.numel()
        length = max_padded_len(n, E, bs)
        valid = (flat >= 0) & (flat < E)
        ids, src = flat[valid], torch.arange(n, device=dev)[valid]          # the ids of this rank's experts

        counts = torch.bincount(ids, minlength=E)                          # [E]
        padded = (counts + bs - 1) // bs * bs
        pad_start = torch.cumsum(padded, 0) - padded                      # exclusive prefix sums
        raw_start = torch.cumsum(counts, 0) - counts
        # Stable sort by expert id keeps increasing flat index within each expert.
        sorted_experts, perm = torch.sort(ids, stable=True)
        order = src[perm]
        rank = torch.arange(ids.numel(), device=dev) - raw_start[sorted_experts]
        dest = pad_start[sorted_experts] + rank

        sorted_token_ids = torch.full((length,), n, dtype=torch.int32, device=dev)
        sorted_token_ids[dest] = order.to(torch.int32)

        num_blocks = length // bs
        block_end = torch.cumsum(padded // bs, 0)                          # blocks up to and including e
        block_idx = torch.arange(num_blocks, device=dev)
        owner = torch.searchsorted(block_end, block_idx, right=True)       # first e with block_end[e] > b
        expert_ids = torch.where(owner < E, owner, torch.full_like(owner, -1)).to(torch.int32)

        num_post = padded.sum().reshape(1).to(torch.int32)
        extra = ()
        if self.with_counts:
            offsets = torch.zeros(E + 1, dtype=torch.int32, device=dev)
            offsets[1:] = torch.cumsum(counts, 0)
            extra = (counts.to(torch.int32), offsets)
        if self.exact_sizes:
            used = int(num_post.item())
            return sorted_token_ids[:used], expert_ids[:used // bs], num_post, *extra
        return sorted_token_ids, expert_ids, num_post, *extra


def roofline_flops(inputs, outputs, **_):
    return 0  # integer bookkeeping only
