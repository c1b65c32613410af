"""On a Hopper GPU: the Gluon path of the KB's varlen attention kernel (through scripts/gluon_attention_device.py's
launcher of explicit tunables) against the problem's float reference, over the cases its TMA ring has to get right — sequences of uneven lengths (a chunk
that ends inside a page, decode rows under bottom-right causality), a shuffled block table, NaN in every cache
slot no sequence uses (a stale cache), GQA groups that do not divide the tile's rows, pages larger and smaller
than a chunk, one and two warpgroups, block ids read a chunk ahead, fp16, key lengths from cu_seqlens_k; and AUTO
with GLUON on sends a 16-slot paged cache there."""

from __future__ import annotations

from types import ModuleType

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

pytestmark = pytest.mark.gpu


def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


@pytest.fixture(scope="module")
def modules() -> tuple[ModuleType, ModuleType]:
    if not _hopper():
        pytest.skip("needs an sm_90 GPU")
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    return (import_file(REPO / "scripts/gluon_attention_device.py", "gluon_attention_gpu"),
            import_file(REPO / "problems/attention_prefill_varlen/reference.py", "varlen_reference_gluon"))


def _case(heads: int, kv_heads: int, dim: int, page: int, dtype: torch.dtype = torch.bfloat16,
          growing: bool = False):
    """Uneven query and key lengths over a shuffled paged cache whose unused slots hold NaN; `growing` scales
    each key by 1 + position / 32, so a row's largest score keeps growing along the keys (by far more than a
    factor 256 between the first chunk and the last)."""
    torch.manual_seed(0)
    q_lens, k_lens = [256, 1, 37, 100, 5], [256, 300, 37, 163, 129]
    cu = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    per_seq = -(-max(k_lens) // page)
    blocks = per_seq * len(k_lens) + 7
    table = torch.randperm(blocks, device="cuda")[: per_seq * len(k_lens)].view(len(k_lens), per_seq).int()
    k = torch.full((blocks, page, kv_heads, dim), float("nan"), dtype=dtype, device="cuda")
    v = torch.full_like(k, float("nan"))
    for seq, length in enumerate(k_lens):
        for key in range(0, length, 1):
            block, slot = int(table[seq, key // page]), key % page
            k[block, slot], v[block, slot] = torch.randn(2, kv_heads, dim, device="cuda")
            if growing:
                k[block, slot] *= 1 + key / 32
    q = torch.randn(int(cu[-1]), heads, dim, dtype=dtype, device="cuda")
    used = torch.tensor(k_lens, dtype=torch.int32, device="cuda")
    return q, k, v, cu, used, table


def _reference(reference: ModuleType, heads: int, kv_heads: int, dim: int, q, k, v, cu, used, table):
    return reference.Model(heads, kv_heads, dim)(q.float(), k.float(), v.float(), cu, seqused_k=used,
                                                 block_table=table)


def _assert_gluon_matches(kb: ModuleType, tiles: dict, case: tuple, want: torch.Tensor, heads: int, kv_heads: int,
                          dim: int) -> None:
    """The Gluon kernel takes the case with these tiles and writes the reference's output into every element of
    an output that starts as a guard value (7.0), with no NaN from the stale cache slots."""
    q, k, v, cu, used, table = case
    assert kb._gluon_fits(q, k, v, table, heads // kv_heads, dim, tiles)
    out_guard = torch.full((q.shape[0], heads, dim), 7.0, dtype=q.dtype, device="cuda")
    got = kb._launch_gluon(q, k, v, out_guard, cu, cu, used, table, heads // kv_heads, dim ** -0.5, True, tiles)
    assert not got.isnan().any()
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("heads, kv_heads, dim, page, block_n, stages, warps, overlap, ahead", [
    (16, 4, 128, 16, 64, 3, 4, 0, 0),
    (10, 1, 128, 16, 32, 2, 8, 0, 0),   # a group of 10: 6 tokens (60 rows) of a 64-row warpgroup
    (8, 8, 64, 128, 64, 4, 4, 0, 0),    # pages larger than a chunk: two chunks a page
    (28, 4, 128, 32, 64, 2, 8, 0, 0),
    (16, 4, 128, 16, 64, 3, 4, 1, 0),   # the next chunk's Q K^T during this chunk's softmax
    (10, 1, 128, 16, 32, 4, 8, 1, 0),
    (8, 8, 64, 128, 64, 3, 4, 1, 0),
    (16, 4, 128, 16, 32, 2, 4, 0, 1),   # block ids a chunk ahead
    (10, 1, 128, 16, 64, 3, 8, 1, 1),
    (8, 2, 256, 16, 16, 4, 4, 0, 1),    # one page a chunk, head 256
])
def test_gluon_paged_attention_matches_the_reference(modules: tuple[ModuleType, ModuleType], heads: int,
                                                     kv_heads: int, dim: int, page: int, block_n: int,
                                                     stages: int, warps: int, overlap: int, ahead: int) -> None:
    kernel, reference = modules
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    got = kernel.launch(q, k, v, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=block_n, STAGES=stages,
                        num_warps=warps, OVERLAP=overlap, BT_AHEAD=ahead)
    assert not got.isnan().any()
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("heads, kv_heads, dim, page, block_n, stages, warps, ahead", [
    (16, 16, 72, 16, 32, 2, 4, 0),   # 64 + 16 columns, the last 8 of the second part the next head's
    (4, 4, 80, 16, 64, 3, 8, 0),     # 64 + 16 exactly, two warpgroups
    (16, 2, 72, 16, 32, 2, 4, 1),    # GQA, the last KV head's second part past the row's end (zeros)
    (8, 2, 96, 32, 32, 2, 4, 0),     # 64 + 32, pages of two boxes a chunk
    (16, 2, 192, 16, 32, 2, 4, 0),   # 128 + 64
])
def test_gluon_split_head_matches_the_reference(modules: tuple[ModuleType, ModuleType], heads: int, kv_heads: int,
                                                dim: int, page: int, block_n: int, stages: int, warps: int,
                                                ahead: int) -> None:
    """A head that is not a power of two as two power-of-two parts (GLUON_SPLIT): the columns it reads past the
    head (the next head's, or past the cache row) never reach the output, and every element of the output is
    written (it starts as a guard value)."""
    kernel, reference = modules
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    kb = kernel._kb_kernel()
    tiles = {"GLUON": 1, "GLUON_BLOCK_N": block_n, "GLUON_STAGES": stages, "GLUON_WARPS": warps,
             "GLUON_BT_AHEAD": ahead, "GLUON_SPLIT": 1, "SPLIT_HEAD": 1, "GLUON_MAXNREG": 128,
             "GLUON_SPLIT_BLOCK_N": block_n}
    assert kb._gluon_head_parts(dim, tiles)[1] > 0
    _assert_gluon_matches(kb, tiles, (q, k, v, cu, used, table), want, heads, kv_heads, dim)


@pytest.mark.parametrize("heads, kv_heads, dim, page, block_n, stages, warps, overlap, full, lazy, growing", [
    (16, 4, 128, 16, 32, 2, 4, 0, 1, 1, False),   # AUTO's tiles for 16-slot pages
    (16, 4, 128, 16, 32, 2, 4, 0, 1, 1, True),    # rescales long after the first chunk
    (16, 4, 128, 16, 32, 2, 4, 0, 0, 1, True),    # LAZY alone
    (10, 1, 128, 16, 64, 3, 8, 0, 1, 1, True),    # two warpgroups: the growth test spans both
    (16, 4, 128, 16, 64, 3, 4, 1, 1, 1, True),    # OVERLAP
    (8, 2, 256, 16, 16, 4, 4, 0, 1, 0, False),    # FULL alone, one page a chunk
    (8, 8, 64, 128, 64, 4, 4, 0, 1, 1, True),     # pages larger than a chunk
    (16, 16, 72, 16, 64, 2, 4, 0, 1, 1, True),    # a split head (64 + 16): both accumulators rescaled
])
def test_gluon_unmasked_chunks_and_lazy_rescale_match_the_reference(
        modules: tuple[ModuleType, ModuleType], heads: int, kv_heads: int, dim: int, page: int, block_n: int,
        stages: int, warps: int, overlap: int, full: int, lazy: int, growing: bool) -> None:
    """GLUON_FULL (chunks every row sees whole skip the masks) and GLUON_LAZY (the accumulator rescaled only when
    a running max grows by more than a factor 256): the same result as the reference, also where the scores keep
    growing along the keys, so rescales happen long after the first chunk."""
    kernel, reference = modules
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page, growing=growing)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    kb = kernel._kb_kernel()
    split = int(dim & (dim - 1) != 0)
    tiles = {"GLUON": 1, "GLUON_BLOCK_N": block_n, "GLUON_STAGES": stages, "GLUON_WARPS": warps,
             "GLUON_OVERLAP": overlap, "GLUON_SPLIT": split, "SPLIT_HEAD": split, "GLUON_SPLIT_BLOCK_N": block_n,
             "GLUON_MAXNREG": 128, "GLUON_FULL": full, "GLUON_LAZY": lazy}
    _assert_gluon_matches(kb, tiles, (q, k, v, cu, used, table), want, heads, kv_heads, dim)


@pytest.mark.parametrize("heads, kv_heads, dim, page, block_n, stages, full, maxnreg", [
    (16, 4, 128, 16, 32, 2, 1, 128),   # AUTO's Gluon tiles for 16-slot pages
    (16, 4, 128, 16, 32, 4, 1, 128),   # a deeper ring: the copy warp runs further ahead
    (16, 4, 128, 16, 32, 3, 0, 96),    # every chunk masked; a ring depth that does not divide the chunks
    (8, 2, 256, 16, 16, 4, 1, 0),      # one page a chunk, head 256
    (8, 8, 64, 128, 64, 2, 1, 0),      # pages larger than a chunk
    (10, 1, 128, 16, 64, 2, 1, 128),   # a GQA group that does not divide the tile's rows
    (16, 16, 72, 16, 64, 2, 1, 128),   # a split head (64 + 16): the copy warp fills both parts' rings
    (16, 2, 192, 16, 32, 3, 0, 0),     # 128 + 64, every chunk masked
])
def test_warp_specialized_gluon_attention_matches_the_reference(
        modules: tuple[ModuleType, ModuleType], heads: int, kv_heads: int, dim: int, page: int, block_n: int,
        stages: int, full: int, maxnreg: int) -> None:
    """GLUON_WS (one warp issues the copies, the kernel's warps attend; the ring's slots handed back and forth
    through two barriers each): the reference's result on uneven sequences over a stale (NaN) shuffled cache,
    with scores that grow along the keys, every output element written."""
    kernel, reference = modules
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page, growing=True)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    kb = kernel._kb_kernel()
    split = int(dim & (dim - 1) != 0)
    tiles = {"GLUON": 1, "GLUON_BLOCK_N": block_n, "GLUON_STAGES": stages, "GLUON_WARPS": 4,
             "GLUON_MAXNREG": maxnreg, "GLUON_FULL": full, "GLUON_WS": 1, "GLUON_SPLIT": split, "SPLIT_HEAD": split,
             "GLUON_SPLIT_BLOCK_N": block_n}
    _assert_gluon_matches(kb, tiles, (q, k, v, cu, used, table), want, heads, kv_heads, dim)


@pytest.mark.parametrize("heads, kv_heads, dim, page, block_n, stages, part_chunks, full, lazy", [
    (16, 2, 128, 16, 32, 2, 2, 1, 0),    # a 300-key row in five parts of 64 keys
    (16, 2, 128, 16, 32, 3, 4, 0, 1),    # every chunk masked, the lazy rescale, a deeper ring
    (16, 16, 72, 16, 64, 2, 1, 1, 1),    # a split head (64 + 16): both accumulators parked; one chunk a part
    (8, 2, 256, 16, 16, 4, 3, 1, 0),     # head 256, one page a chunk, parts that do not divide the chunks
    (8, 8, 64, 128, 64, 2, 2, 1, 0),     # pages larger than a chunk
])
def test_gluon_attention_in_key_parts_matches_the_reference(
        modules: tuple[ModuleType, ModuleType], heads: int, kv_heads: int, dim: int, page: int, block_n: int,
        stages: int, part_chunks: int, full: int, lazy: int) -> None:
    """GLUON_PART_CHUNKS: tiles of more chunks than a part run as several programs whose partial accumulators and
    row (max, sum) a second kernel merges; tiles of one part write their output directly. The reference's result
    on uneven sequences (a 1-token decode row with 300 keys, a 37-token one with 37) over a stale shuffled cache,
    with scores that grow along the keys, every output element written."""
    kernel, reference = modules
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page, growing=True)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    kb = kernel._kb_kernel()
    split = int(dim & (dim - 1) != 0)
    tiles = {"GLUON": 1, "GLUON_BLOCK_N": block_n, "GLUON_STAGES": stages, "GLUON_WARPS": 4, "GLUON_MAXNREG": 128,
             "GLUON_SPLIT": split, "SPLIT_HEAD": split, "GLUON_SPLIT_BLOCK_N": block_n, "GLUON_FULL": full,
             "GLUON_LAZY": lazy, "GLUON_PART_CHUNKS": part_chunks}
    _assert_gluon_matches(kb, tiles, (q, k, v, cu, used, table), want, heads, kv_heads, dim)


@pytest.mark.parametrize("heads, kv_heads, dim, q_len, k_len, block_n, ws, split", [
    (16, 2, 128, 300, 333, 32, 0, 0),   # 8 tokens a tile: the last tile partial, 33 keys of earlier context
    (16, 2, 128, 300, 333, 64, 1, 0),   # the copy warp's form
    (32, 8, 128, 77, 77, 64, 1, 0),
    (16, 16, 72, 130, 130, 64, 0, 1),   # a split head
    (16, 16, 80, 1000, 1000, 64, 1, 1),  # a split head with the copy warp
    (8, 2, 256, 5, 900, 32, 0, 0),      # five decode-like rows over 900 keys, head 256
    (20, 20, 64, 7, 7, 32, 0, 0),       # a 7-token sequence: one tile
])
def test_a_single_sequence_needs_no_tile_prefix_kernel(
        modules: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch, heads: int, kv_heads: int,
        dim: int, q_len: int, k_len: int, block_n: int, ws: int, split: int) -> None:
    """A batch of one sequence: the Gluon kernel counts its own tiles (one launch; the prefix/map kernel is never
    called) and still matches the reference on a shuffled stale (NaN) cache, every output element written, the
    surplus programs of the grid's bound storing nothing."""
    kernel, reference = modules
    torch.manual_seed(1)
    page = 16
    per_seq = -(-k_len // page)
    table = torch.randperm(per_seq + 5, device="cuda")[:per_seq].view(1, per_seq).int()
    k = torch.full((per_seq + 5, page, kv_heads, dim), float("nan"), dtype=torch.bfloat16, device="cuda")
    v = torch.full_like(k, float("nan"))
    for key in range(k_len):
        block, slot = int(table[0, key // page]), key % page
        k[block, slot], v[block, slot] = torch.randn(2, kv_heads, dim, device="cuda")
    q = torch.randn(q_len, heads, dim, dtype=torch.bfloat16, device="cuda")
    cu = torch.tensor([0, q_len], dtype=torch.int32, device="cuda")
    used = torch.tensor([k_len], dtype=torch.int32, device="cuda")
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    kb = kernel._kb_kernel()

    class _NoPrefix:
        def __getitem__(self, grid: object) -> None:
            raise AssertionError("the tile prefix kernel ran for a single sequence")

    monkeypatch.setattr(kb, "_tile_prefix_map_kernel", _NoPrefix())
    tiles = {"GLUON": 1, "GLUON_BLOCK_N": block_n, "GLUON_STAGES": 2, "GLUON_WARPS": 4, "GLUON_MAXNREG": 128,
             "GLUON_FULL": 1, "GLUON_WS": ws, "GLUON_SPLIT": split, "SPLIT_HEAD": split,
             "GLUON_SPLIT_BLOCK_N": block_n}
    _assert_gluon_matches(kb, tiles, (q, k, v, cu, used, table), want, heads, kv_heads, dim)


def test_auto_sends_a_split_head_to_gluon_when_asked(modules: tuple[ModuleType, ModuleType],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The KB Model under AUTO: a head of 80 over 16-slot pages goes to the Gluon kernel with GLUON_SPLIT and to
    the Triton kernel without; both match the reference."""
    kernel, reference = modules
    kb = kernel._kb_kernel()
    heads, kv_heads, dim = 16, 4, 80
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, 16)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    launch = kb._launch_gluon
    for split, gluon_calls in ((1, [1]), (0, [])):
        calls: list[int] = []
        monkeypatch.setitem(kb.TUNABLES, "GLUON_SPLIT", split)
        monkeypatch.setattr(kb, "_launch_gluon", lambda *a, **kw: calls.append(1) or launch(*a, **kw))
        got = kb.Model(heads, kv_heads, dim)(q, k, v, cu, seqused_k=used, block_table=table)
        assert calls == gluon_calls
        torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("heads, kv_heads, dim, page, block_n, warps, programs, maxnreg", [
    (16, 4, 128, 16, 32, 4, 3, 0),     # 3 programs walk all 5 sequences' items: the stream crosses items
    (16, 4, 128, 16, 32, 4, 1, 128),   # one program, every item; a register cap (spills)
    (10, 1, 128, 16, 16, 8, 5, 0),     # one page a chunk, two warpgroups
    (8, 8, 64, 128, 64, 4, 7, 0),      # pages larger than a chunk
    (8, 2, 256, 16, 32, 4, 0, 0),      # the launcher's own grid (PERSIST programs an SM), head 256
    (28, 4, 128, 32, 64, 8, 2, 0),
])
def test_persistent_gluon_attention_matches_the_reference(modules: tuple[ModuleType, ModuleType], heads: int,
                                                          kv_heads: int, dim: int, page: int, block_n: int,
                                                          warps: int, programs: int, maxnreg: int) -> None:
    """The persistent form: a program's work items (tile x KV head) of different sequences in one chunk stream,
    so a chunk copied ahead may belong to the next item, whose Q replaces this one's in shared memory."""
    kernel, reference = modules
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page)
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    got = kernel.launch(q, k, v, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=block_n, STAGES=2,
                        num_warps=warps, PERSIST=3, PROGRAMS=programs, MAXNREG=maxnreg)
    assert not got.isnan().any()
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


def test_persistent_gluon_attention_writes_zeros_for_rows_that_see_no_key(
        modules: tuple[ModuleType, ModuleType]) -> None:
    """A sequence with more queries than keys (bottom-right causal): its first rows see no key and are zeros, in
    an item of at least one chunk, between items that do attend."""
    kernel, reference = modules
    heads, kv_heads, dim, page = 16, 4, 128, 16
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, page)
    used = used.clone()
    used[3] = 40  # 100 queries over 40 keys: rows 0-59 see none
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table).nan_to_num(0.0)
    got = kernel.launch(q, k, v, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=2,
                        num_warps=4, PERSIST=3, PROGRAMS=2)
    assert not got.isnan().any()
    assert got[int(cu[3]):int(cu[3]) + 60].abs().max().item() == 0.0
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


def test_auto_sends_small_pages_to_gluon_in_fp16_and_with_key_offsets(
        modules: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    """The KB Model under AUTO with GLUON on takes the Gluon path for a 16-slot fp16 cache, reading key lengths
    from cu_seqlens_k when no seqused_k is given, and matches the reference."""
    kernel, reference = modules
    kb = kernel._kb_kernel()
    monkeypatch.setitem(kb.TUNABLES, "GLUON", 1)
    calls = []
    launch = kb._launch_gluon
    monkeypatch.setattr(kb, "_launch_gluon", lambda *a, **kw: calls.append(1) or launch(*a, **kw))
    heads, kv_heads, dim = 16, 4, 128
    q, k, v, cu, used, table = _case(heads, kv_heads, dim, 16, torch.float16)
    cu_k = torch.cat([used.new_zeros(1), used.cumsum(0)]).to(torch.int32)
    got = kb.Model(heads, kv_heads, dim)(q, k, v, cu, cu_seqlens_k=cu_k, block_table=table)
    assert calls == [1]
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    assert not got.isnan().any()
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("q_len, seqs, copy_warp", [(700, 1, 1), (256, 12, 0)])
def test_auto_takes_the_copy_warp_for_a_long_sequence_only(
        modules: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch, q_len: int, seqs: int,
        copy_warp: int) -> None:
    """Under AUTO the Gluon path takes the copy warp with 64-key chunks for a 700-token sequence and keeps the
    plain form for a batch of 256-token sequences (816 programs); both match the reference."""
    kernel, reference = modules
    kb = kernel._kb_kernel()
    monkeypatch.setitem(kb.TUNABLES, "GLUON", 1)
    seen: list[dict] = []
    launch = kb._launch_gluon
    monkeypatch.setattr(kb, "_launch_gluon", lambda *a, **kw: seen.append(dict(a[-1])) or launch(*a, **kw))
    heads, kv_heads, dim, page = 16, 4 if seqs > 1 else 2, 128, 16
    torch.manual_seed(2)
    per_seq = -(-q_len // page)
    table = torch.randperm(per_seq * seqs, device="cuda").view(seqs, per_seq).int()
    k = torch.randn(per_seq * seqs, page, kv_heads, dim, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    q = torch.randn(q_len * seqs, heads, dim, dtype=torch.bfloat16, device="cuda")
    cu = torch.arange(0, q_len * seqs + 1, q_len, dtype=torch.int32, device="cuda")
    used = torch.full((seqs,), q_len, dtype=torch.int32, device="cuda")
    got = kb.Model(heads, kv_heads, dim)(q, k, v, cu, seqused_k=used, block_table=table)
    assert len(seen) == 1 and seen[0].get("GLUON_WS", 0) == copy_warp
    assert seen[0]["GLUON_BLOCK_N"] == (64 if copy_warp else kb.TUNABLES["GLUON_BLOCK_N"])
    want = _reference(reference, heads, kv_heads, dim, q, k, v, cu, used, table)
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)
