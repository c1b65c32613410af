"""The paged decode reference kernel on both cache layouts its reference defines (CPU interpreter, float32):
[blocks, block_size, kv_heads, head_dim], and vLLM's split layout (K [blocks, kv_heads, head_dim / x,
block_size, x], V [blocks, kv_heads, head_dim, block_size]); sizes read from the tensors."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO


@pytest.mark.parametrize("page_tiles", [0, 1])
@pytest.mark.parametrize("split_kv, partition, block_n", [(0, 512, 64), (1, 512, 64), (1, 8, 8)])
def test_paged_decode_reads_either_cache_layout(split_kv: int, partition: int, block_n: int, page_tiles: int) -> None:
    """Split-KV with several partitions (8 tokens, chunks of 8: pages of 4 tile them) and with one (which runs
    split-free); the split layout loaded page by page or token by token."""
    kernel = import_file(REPO / "kb/family/attention/attention_paged_decode.py", "paged_kernel")
    reference = import_file(REPO / "problems/attention_paged_decode/reference.py", "paged_reference")
    kernel.TUNABLES.update(SPLIT_KV=split_kv, PARTITION=partition, BLOCK_N=block_n, PAGE_TILES=page_tiles)
    torch.manual_seed(0)
    batch, heads, kv_heads, dim, page, x, blocks = 3, 8, 2, 32, 4, 8, 20
    q = torch.randn(batch, heads, dim)
    k, v = torch.randn(blocks, page, kv_heads, dim), torch.randn(blocks, page, kv_heads, dim)
    table = torch.randperm(blocks)[: batch * 5].view(batch, 5).to(torch.int32)
    lengths = torch.tensor([3, 17, 9], dtype=torch.int32)
    want = reference.Model()(q, k, v, table, lengths)
    torch.testing.assert_close(kernel.Model()(q, k, v, table, lengths), want, atol=1e-5, rtol=1e-5)
    k_split = k.reshape(blocks, page, kv_heads, dim // x, x).permute(0, 2, 3, 1, 4).contiguous()
    v_split = v.permute(0, 2, 3, 1).contiguous()
    torch.testing.assert_close(reference.Model()(q, k_split, v_split, table, lengths), want)
    torch.testing.assert_close(kernel.Model()(q, k_split, v_split, table, lengths), want, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="disagree"):
        kernel.Model(num_kv_heads=4)(q, k, v, table, lengths)


@pytest.mark.parametrize("page_tiles", [0, 1])
def test_slots_past_the_sequence_never_reach_the_output(page_tiles: int) -> None:
    """Whole pages are read; the slots of the last page past the sequence hold NaN here (as in a poisoned or
    reused cache) and must not leak into the output (p = 0 times NaN is NaN)."""
    kernel = import_file(REPO / "kb/family/attention/attention_paged_decode.py", "paged_kernel")
    reference = import_file(REPO / "problems/attention_paged_decode/reference.py", "paged_reference")
    kernel.TUNABLES.update(SPLIT_KV=0, BLOCK_N=8, PAGE_TILES=page_tiles)
    torch.manual_seed(1)
    batch, heads, kv_heads, dim, page, x = 2, 4, 2, 16, 4, 4
    q = torch.randn(batch, heads, dim)
    k, v = torch.randn(6, page, kv_heads, dim), torch.randn(6, page, kv_heads, dim)
    table = torch.tensor([[0, 1, 2], [3, 4, 5]], dtype=torch.int32)
    lengths = torch.tensor([9, 6], dtype=torch.int32)
    want = reference.Model()(q, k, v, table, lengths)
    for b, n in enumerate(lengths.tolist()):  # every slot past the sequence
        for t in range(n, table.shape[1] * page):
            k[table[b, t // page], t % page] = float("nan")
            v[table[b, t // page], t % page] = float("nan")
    k_split = k.reshape(6, page, kv_heads, dim // x, x).permute(0, 2, 3, 1, 4).contiguous()
    v_split = v.permute(0, 2, 3, 1).contiguous()
    torch.testing.assert_close(kernel.Model()(q, k_split, v_split, table, lengths), want, atol=1e-5, rtol=1e-5)
