import torch
import torch.nn as nn


class Model(nn.Module):
    """Gather each sequence's cached rows, block by block through its block table, into one packed tensor."""

    def forward(self, cache, block_table, cu_seq_lens):
        block_size = cache.shape[1]
        pieces = []
        for b in range(block_table.shape[0]):
            n = int(cu_seq_lens[b + 1].item() - cu_seq_lens[b].item())
            blocks = (n + block_size - 1) // block_size
            rows = cache[block_table[b, :blocks].long()].reshape(-1, cache.shape[-1])[:n]
            pieces.append(rows)
        return torch.cat(pieces, dim=0)
