"""The varlen attention reference kernel in every form its reference defines: separate key lengths, causal
aligned at the bottom right or not causal, keys in a paged cache (CPU interpreter, float32)."""

from __future__ import annotations

from types import ModuleType

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO
from tests.knowledge.hopper_compile import run_compile_script

H, KVH, D, PAGE = 4, 2, 24, 4


@pytest.fixture(scope="module")
def modules() -> tuple[ModuleType, ModuleType]:
    kernel = import_file(REPO / "kb/family/attention/attention_prefill_varlen.py", "varlen_kernel")
    # the explicit tiles (AUTO 0), several tiles and chunks per sequence at these sizes
    kernel.TUNABLES.update(AUTO=0, BLOCK_M=16, BLOCK_N=16)
    return kernel, import_file(REPO / "problems/attention_prefill_varlen/reference.py", "varlen_reference")


def _offsets(lengths: list[int]) -> torch.Tensor:
    return torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(), dtype=torch.int32)


def _shuffled_paged_cache(k_lens: list[int], spare: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """K and V pools of PAGE-slot blocks (`spare` never used), and the block table and key lengths that give each
    sequence its own blocks in random order."""
    per_seq = (max(k_lens) + PAGE - 1) // PAGE
    blocks = per_seq * len(k_lens) + spare
    k, v = torch.randn(blocks, PAGE, KVH, D), torch.randn(blocks, PAGE, KVH, D)
    table = torch.randperm(blocks)[: per_seq * len(k_lens)].view(len(k_lens), per_seq).to(torch.int32)
    return k, v, {"seqused_k": torch.tensor(k_lens, dtype=torch.int32), "block_table": table}


@pytest.mark.parametrize("q_lens, k_lens, causal, paged", [
    ([3, 1, 20], [40, 9, 20], True, False),  # chunked prefill and decode rows: bottom-right causal
    ([5, 33, 0, 17], [5, 33, 0, 17], False, False),  # not causal, an empty sequence
    ([1, 4, 17], [30, 9, 17], True, True),  # keys gathered from a paged cache
    ([1, 4, 17], [30, 9, 17], False, True),
])
@pytest.mark.parametrize("tile_map, pack_gqa, heads", [(0, 0, H), (1, 0, H), (0, 1, H), (1, 1, 3 * KVH)])
def test_varlen_kernel_matches_its_reference(modules: tuple[ModuleType, ModuleType], q_lens: list[int],
                                             k_lens: list[int], causal: bool, paged: bool, tile_map: int,
                                             pack_gqa: int, heads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, reference = modules
    monkeypatch.setitem(kernel.TUNABLES, "TILE_MAP", tile_map)  # sequence of a tile: searched, or from the map
    # rows of a tile: one head's tokens, or (token, head) pairs of a KV head's group (a group of 3: 16 rows hold
    # 5 tokens, one row idle)
    monkeypatch.setitem(kernel.TUNABLES, "PACK_GQA", pack_gqa)
    torch.manual_seed(0)
    cu_q, cu_k = _offsets(q_lens), _offsets(k_lens)
    q = torch.randn(int(cu_q[-1]), heads, D)
    extra: dict[str, torch.Tensor] = {"cu_seqlens_k": cu_k}
    k, v = torch.randn(int(cu_k[-1]), KVH, D), torch.randn(int(cu_k[-1]), KVH, D)
    if paged:
        k, v, extra = _shuffled_paged_cache(k_lens, 3)
    want = reference.Model(heads, KVH, D, causal=causal)(q, k, v, cu_q, **extra)
    launches: list[tuple[tuple, bool]] = []
    attention = kernel._attention_prefill_varlen_kernel

    class Recorded:  # the launch's grid and packing flag, then the kernel itself
        def __getitem__(self, grid: tuple):  # type: ignore[no-untyped-def]
            def launch(*args, **kwargs):  # type: ignore[no-untyped-def]
                launches.append((grid, kwargs["PACK_GQA"]))
                return attention[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(kernel, "_attention_prefill_varlen_kernel", Recorded())
    got = kernel.Model(heads, KVH, D, causal=causal)(q, k, v, cu_q, **extra)
    # packed: one program column per KV head, each holding the group's heads
    assert [(g[1], packed) for g, packed in launches] == [(KVH, True) if pack_gqa else (heads, False)]
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_strides_not_divisible_by_the_vector_unit(modules: tuple[ModuleType, ModuleType]) -> None:
    """Rows padded to an odd length (stride 25) pass strides in units of one element; a head of 24 floats in
    units of four: both give the reference's result."""
    kernel, reference = modules
    assert kernel._stride_unit(4, 24 * H, 24) == 4 and kernel._stride_unit(2, 72 * 5, 72) == 8
    assert kernel._stride_unit(4, 25 * H, 25) == 1
    torch.manual_seed(1)
    cu = _offsets([9, 21])
    q = torch.randn(30, H, D + 1)[..., :D]
    k, v = torch.randn(30, KVH, D + 1)[..., :D], torch.randn(30, KVH, D)
    want = reference.Model(H, KVH, D)(q, k, v, cu)
    torch.testing.assert_close(kernel.Model(H, KVH, D)(q, k, v, cu), want, atol=1e-4, rtol=1e-4)


def test_tile_prefix_spans_batches_longer_than_one_chunk(modules: tuple[ModuleType, ModuleType]) -> None:
    """Programs find their sequence in the running tile count, which the first kernel builds in chunks."""
    kernel, _ = modules
    lengths = [(7 * i) % 40 for i in range(1030)]
    prefix = torch.empty(len(lengths) + 1, dtype=torch.int32)
    kernel._tile_prefix_kernel[(1,)](_offsets(lengths), prefix, len(lengths), 16, CHUNK=1024)
    tiles = torch.tensor([(n + 15) // 16 for n in lengths])
    assert prefix.tolist() == [0] + tiles.cumsum(0).tolist()


@pytest.mark.parametrize("lengths, chunk", [
    ([0, 5, 16 * 300 + 3, 0, 17, 1], 1024),  # a sequence with more tiles than the map's chunk, empty ones
    ([(7 * i) % 40 for i in range(70)], 16),  # the sequences before b summed over several chunks
])
def test_tile_prefix_map_names_each_tiles_sequence(modules: tuple[ModuleType, ModuleType], lengths: list[int],
                                                   chunk: int) -> None:
    """One launch writes the running tile count and each tile's sequence."""
    kernel, _ = modules
    tiles = [(n + 15) // 16 for n in lengths]
    prefix = torch.full((len(lengths) + 1,), -1, dtype=torch.int32)
    seq_of_tile = torch.full((sum(tiles),), -1, dtype=torch.int32)
    kernel._tile_prefix_map_kernel[(len(lengths),)](_offsets(lengths), prefix, seq_of_tile, 16, CHUNK=chunk,
                                                    MAP_CHUNK=256)
    assert prefix.tolist() == [0] + torch.tensor(tiles).cumsum(0).tolist()
    assert seq_of_tile.tolist() == [b for b, n in enumerate(tiles) for _ in range(n)]


def test_auto_tiles_follow_the_workload(modules: tuple[ModuleType, ModuleType],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """AUTO picks short-sequence tiles for batches of short sequences and 128-row tiles for long ones, from host
    sizes alone; its launch is as correct as any explicit one."""
    kernel, reference = modules
    short = kernel._workload_tiles(total=300 * 256, batch=300, block_d=128, group=4, kv_heads=4)
    long = kernel._workload_tiles(total=24752, batch=1, block_d=128, group=1, kv_heads=16)
    wide = kernel._workload_tiles(total=6000, batch=1, block_d=256, group=8, kv_heads=1)
    few = kernel._workload_tiles(total=875, batch=1, block_d=256, group=8, kv_heads=2)  # short, but one sequence
    mha = kernel._workload_tiles(total=300 * 256, batch=300, block_d=128, group=1, kv_heads=16)
    assert (short["BLOCK_M"], short["num_warps"], short["num_stages"], short["PACK_GQA"], short["KV_AHEAD"],
            short["MAXNREG"], short["TMA"]) == (128, 8, 1, 1, 1, 128, 0)  # GQA packed into 128 rows, two warpgroups
    assert (mha["BLOCK_M"], mha["num_warps"], mha["BLOCK_N"]) == (64, 4, 32)  # one head's tokens: 64 rows
    assert (long["BLOCK_M"], long["BLOCK_N"], long["num_warps"]) == (128, 128, 8)
    assert (wide["BLOCK_M"], wide["BLOCK_N"]) == (128, 64)  # a 256-wide head halves the key chunk
    assert (few["BLOCK_M"], few["num_warps"]) == (64, 8)  # 222 small tiles, 56 long ones: 132 SMs
    monkeypatch.setitem(kernel.TUNABLES, "AUTO", 1)
    torch.manual_seed(0)
    lengths = [7, 30, 1]
    cu = _offsets(lengths)
    q = torch.randn(int(cu[-1]), H, D)
    k, v = torch.randn(int(cu[-1]), KVH, D), torch.randn(int(cu[-1]), KVH, D)
    want = reference.Model(H, KVH, D, causal=True)(q, k, v, cu)
    torch.testing.assert_close(kernel.Model(H, KVH, D, causal=True)(q, k, v, cu), want, atol=1e-4, rtol=1e-4)


def test_auto_takes_the_gluon_copy_warp_for_long_streams_and_spare_sms(modules: tuple[ModuleType, ModuleType]
                                                                        ) -> None:
    """AUTO's Gluon form from host sizes: the copy warp with 64-key chunks for sequences of 512 or more tokens on
    average (each tile's keys a long stream) or a grid that fits 2 programs an SM over sequences of two 64-key
    chunks or more; the 4-programs-an-SM form for batches of short sequences; nothing for heads the Gluon kernel
    does not take, or forms the copy warp does not combine with."""
    kernel, _ = modules
    base = dict(kernel.TUNABLES)
    streamed = {"GLUON_WS": 1, "GLUON_BLOCK_N": 64, "GLUON_STAGES": 2}

    def rule(total: int, batch: int, heads: int, kv_heads: int, dim: int, **asked: int) -> dict[str, int]:
        return kernel._gluon_workload_tiles(total, batch, heads // kv_heads, kv_heads, dim, {**base, **asked}, 132)

    assert rule(1144, 1, 16, 2, 128) == streamed  # a long sequence
    assert rule(4 * 4096, 4, 32, 8, 128) == streamed  # long sequences, many programs
    assert rule(145, 1, 40, 8, 128) == streamed  # a short one: 112 programs on 132 SMs
    assert rule(72, 1, 16, 4, 256) == {}  # 24 programs, but one or two chunks of keys
    assert rule(16, 1, 16, 1, 128) == {}
    assert rule(875, 1, 16, 2, 256) == streamed  # head 256
    assert rule(1882 * 256, 1882, 16, 4, 128) == {}  # 256-token batches: occupancy
    assert rule(130 * 256, 130, 10, 1, 128) == {}
    assert rule(300 * 300, 300, 16, 4, 128) == {}
    assert rule(11840, 1, 16, 16, 72, GLUON_SPLIT=1, SPLIT_HEAD=1) == streamed  # a split head (64 + 16)
    assert rule(11840, 1, 16, 16, 72, GLUON_SPLIT=0) == {}  # a head the Gluon kernel does not take
    assert rule(1144, 1, 16, 2, 128, GLUON_OVERLAP=1) == {}
    assert rule(1144, 1, 16, 2, 128, GLUON_PERSIST=2) == {}
    assert rule(1144, 1, 16, 2, 128, GLUON_LAZY=1) == {}


def test_auto_makes_the_explicit_tiles_inert() -> None:
    """The tuner spends no evaluation on a tile size while AUTO picks the tiles, and counts such points as one."""
    from aka_tui.knowledge.reference_kernels import kernel_from_source

    path = REPO / "kb/family/attention/attention_prefill_varlen.py"
    kernel = kernel_from_source(path.read_text(), path, "varlen", "kb")
    auto = dict(kernel.tunables, AUTO=1)
    assert kernel.is_inert("BLOCK_M", auto) and not kernel.is_inert("BLOCK_M", dict(auto, AUTO=0))
    assert kernel.canonical(dict(auto, BLOCK_M=128)) == kernel.canonical(auto)


@pytest.mark.parametrize("causal, pack_gqa, tail", [(True, 0, 0), (False, 0, 0), (True, 1, 0), (True, 0, 1),
                                                     (False, 1, 1)])
def test_tma_chunks_match_the_reference(modules: tuple[ModuleType, ModuleType], causal: bool, pack_gqa: int,
                                        tail: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMA: the unmasked K/V chunks through descriptors over [tokens, kv_heads * head] (a head of 32, its own
    power of two): chunks start at each sequence's first key and stop before the masked ones, which keep the
    pointer loads (with TMA_TAIL whole boxes too, reaching into the next sequence's keys or past the tensor's
    end, masked out); a head that is not a power of two (24) takes the pointer path throughout."""
    kernel, reference = modules
    monkeypatch.setitem(kernel.TUNABLES, "TMA", 1)
    monkeypatch.setitem(kernel.TUNABLES, "TMA_TAIL", tail)
    monkeypatch.setitem(kernel.TUNABLES, "PACK_GQA", pack_gqa)
    torch.manual_seed(2)
    q_lens, k_lens = [3, 40, 17], [35, 40, 17]
    cu_q, cu_k = _offsets(q_lens), _offsets(k_lens)
    for dim in (32, D):
        q = torch.randn(int(cu_q[-1]), H, dim)
        k, v = torch.randn(int(cu_k[-1]), KVH, dim), torch.randn(int(cu_k[-1]), KVH, dim)
        assert bool(kernel._kv_descriptors(k, v, kernel.TUNABLES, 16, 32, dim, False)) == (dim == 32)
        want = reference.Model(H, KVH, dim, causal=causal)(q, k, v, cu_q, cu_seqlens_k=cu_k)
        got = kernel.Model(H, KVH, dim, causal=causal)(q, k, v, cu_q, cu_seqlens_k=cu_k)
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("page, pack_gqa, bt_ahead, tail", [(16, 0, 0, 0), (32, 1, 1, 0), (8, 0, 0, 0), (16, 1, 0, 1),
                                                             (32, 0, 0, 1)])
def test_tma_chunks_from_a_paged_cache_match_the_reference(modules: tuple[ModuleType, ModuleType], page: int,
                                                           pack_gqa: int, bt_ahead: int, tail: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """TMA over a paged cache viewed as [blocks * page, kv_heads * head]: each unmasked 16-key chunk is read from
    its own block of a shuffled pool at its offset in the block (two chunks a block at page 32); the masked chunks
    keep the pointer gathers (and the block ids read ahead are left off), or with TMA_TAIL take whole boxes too,
    whose slots past a sequence's end hold NaN here (a stale cache) and must not reach the output; a page smaller
    than a chunk (8) gets no descriptors and the pointer path."""
    kernel, reference = modules
    for key, value in (("TMA", 1), ("PACK_GQA", pack_gqa), ("BT_AHEAD", bt_ahead), ("TMA_TAIL", tail)):
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(3)
    dim, q_lens, k_lens = 32, [3, 40, 17, 1], [35, 70, 17, 50]
    cu_q = _offsets(q_lens)
    per_seq = -(-max(k_lens) // page)
    blocks = per_seq * len(k_lens) + 3
    k, v = torch.full((blocks, page, KVH, dim), float("nan")), torch.full((blocks, page, KVH, dim), float("nan"))
    table = torch.randperm(blocks)[: per_seq * len(k_lens)].view(len(k_lens), per_seq).to(torch.int32)
    for seq, length in enumerate(k_lens):  # only the slots a sequence uses hold keys
        for key in range(length):
            k[table[seq, key // page], key % page], v[table[seq, key // page], key % page] = torch.randn(2, KVH, dim)
    extra = {"seqused_k": torch.tensor(k_lens, dtype=torch.int32), "block_table": table}
    assert bool(kernel._kv_descriptors(k, v, kernel.TUNABLES, 16, 32, dim, True)) == (page >= 16)
    q = torch.randn(int(cu_q[-1]), H, dim)
    for causal in (True, False):
        want = reference.Model(H, KVH, dim, causal=causal)(q, k, v, cu_q, **extra)
        got = kernel.Model(H, KVH, dim, causal=causal)(q, k, v, cu_q, **extra)
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_auto_reads_whole_pages_through_tma_on_its_long_tiles_only(modules: tuple[ModuleType, ModuleType],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """AUTO's long-sequence tiles read a paged cache whose pages hold whole chunks through descriptors (as they
    do contiguous K/V); its short-batch tiles keep the pointer gathers (16-key chunks of 16-slot pages lost)."""
    kernel, _ = modules
    seen: list[bool] = []
    real = kernel._kv_descriptors
    monkeypatch.setattr(kernel, "_kv_descriptors", lambda *args: seen.append(bool(real(*args))) or real(*args))
    for key, value in (("AUTO", 1), ("TMA", 1)):
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    q, cu = torch.randn(200, 4, 32), _offsets([200])
    pool = torch.randn(2, 128, KVH, 32)
    paged = {"seqused_k": torch.tensor([200], dtype=torch.int32), "block_table": torch.tensor([[1, 0]],
                                                                                              dtype=torch.int32)}
    kv = torch.randn(200, KVH, 32)
    for sms in (1000, 1):  # few programs for that many SMs: the long tiles; else the short ones
        monkeypatch.setattr(kernel, "_sm_count", lambda device, sms=sms: sms)
        kernel.Model(4, KVH, 32)(q, pool, pool, cu, **paged)
        kernel.Model(4, KVH, 32)(q, kv, kv, cu)
    assert seen == [True, True, False, False]


@pytest.mark.parametrize("kv_ahead", [0, 1])
@pytest.mark.parametrize("causal", [True, False])
def test_block_ids_read_a_chunk_ahead_match_the_reference(modules: tuple[ModuleType, ModuleType], kv_ahead: int,
                                                          causal: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """BT_AHEAD: each chunk's cache blocks read one chunk early, carried from the unmasked chunks into the masked
    ones; over a shuffled paged cache, sequences spanning several chunks, a key length not a multiple of the
    chunk and one shorter than a chunk, the kernel still gathers every key from its own block."""
    kernel, reference = modules
    monkeypatch.setitem(kernel.TUNABLES, "KV_AHEAD", kv_ahead)
    torch.manual_seed(2)
    q_lens, k_lens = [1, 6, 21, 35, 20], [3, 40, 21, 50, 30]  # the last: two masked chunks a tile (causal)
    cu_q = _offsets(q_lens)
    q = torch.randn(int(cu_q[-1]), H, D)
    k, v, extra = _shuffled_paged_cache(k_lens, 5)
    want = reference.Model(H, KVH, D, causal=causal)(q, k, v, cu_q, **extra)
    outs = {}
    for ahead in (0, 1):
        monkeypatch.setitem(kernel.TUNABLES, "BT_AHEAD", ahead)
        outs[ahead] = kernel.Model(H, KVH, D, causal=causal)(q, k, v, cu_q, **extra)
    torch.testing.assert_close(outs[1], want, atol=1e-4, rtol=1e-4)
    assert torch.equal(outs[1], outs[0])  # the same keys in the same order: bit-identical


@pytest.mark.parametrize("kv_ahead", [0, 1])
@pytest.mark.parametrize("causal, paged", [(True, False), (False, True)])
def test_split_head_matches_the_reference(modules: tuple[ModuleType, ModuleType], kv_ahead: int, causal: bool,
                                          paged: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A head that is not a power of two (40 = 32 + 8 padded to 16) run as two parts, each with its own dots:
    the reference's output in both parts of the head, masked and unmasked chunks, contiguous and paged K/V."""
    kernel, reference = modules
    d = 40
    assert kernel._head_parts(d, True) == (32, 16) and kernel._head_parts(d, False) == (64, 0)
    assert kernel._head_parts(72, True) == (64, 16) and kernel._head_parts(192, True) == (128, 64)
    assert kernel._head_parts(128, True) == (128, 0) and kernel._head_parts(120, True) == (128, 0)
    assert kernel._head_parts(D, True) == (32, 0)  # 24: 16 + 16 is no narrower than 32
    monkeypatch.setitem(kernel.TUNABLES, "SPLIT_HEAD", 1)
    monkeypatch.setitem(kernel.TUNABLES, "KV_AHEAD", kv_ahead)
    torch.manual_seed(1)
    q_lens = k_lens = [3, 40, 17]
    cu = _offsets(q_lens)
    q = torch.randn(int(cu[-1]), H, d)
    k, v = torch.randn(int(cu[-1]), KVH, d), torch.randn(int(cu[-1]), KVH, d)
    extra: dict[str, torch.Tensor] = {}
    if paged:
        per_seq = (max(k_lens) + PAGE - 1) // PAGE
        pool_k, pool_v = torch.randn(per_seq * 3 + 2, PAGE, KVH, d), torch.randn(per_seq * 3 + 2, PAGE, KVH, d)
        table = torch.randperm(per_seq * 3 + 2)[: per_seq * 3].view(3, per_seq).to(torch.int32)
        extra = {"cu_seqlens_k": cu, "seqused_k": torch.tensor(k_lens, dtype=torch.int32), "block_table": table}
        k, v = pool_k, pool_v
    want = reference.Model(H, KVH, d, causal=causal)(q, k, v, cu, **extra)
    got = kernel.Model(H, KVH, d, causal=causal)(q, k, v, cu, **extra)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)



@pytest.mark.parametrize("dim, tma, kv_ahead, causal", [(32, 1, 0, True), (32, 1, 0, False), (D, 0, 0, True),
                                                        (D, 0, 1, False), (D, 0, 2, True), (40, 0, 0, False),
                                                        (40, 0, 1, True)])
def test_lazy_rescale_matches_the_reference(modules: tuple[ModuleType, ModuleType], dim: int, tma: int,
                                            kv_ahead: int, causal: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """LAZY (the running max, and the accumulators' rescale, move only when a row's max grows by more than 2**8)
    on every unmasked-chunk path: TMA, V beside K, the look-ahead, V after the softmax, a split head (40). The
    keys of the second 16-key chunk score ~6.5 (natural units, ~9.4 in log2) above the first chunk's, so the max
    moves there by more than 2**8 while the first chunk still weighs ~0.1%: a sum or accumulator (either part of
    a split head) left unrescaled there is off by more than the tolerance."""
    kernel, reference = modules
    monkeypatch.setitem(kernel.TUNABLES, "LAZY", 1)
    monkeypatch.setitem(kernel.TUNABLES, "TMA", tma)
    monkeypatch.setitem(kernel.TUNABLES, "KV_AHEAD", kv_ahead)
    monkeypatch.setitem(kernel.TUNABLES, "SPLIT_HEAD", 1)
    torch.manual_seed(3)
    q_lens, k_lens = [3, 40, 17], [35, 40, 17]
    cu_q, cu_k = _offsets(q_lens), _offsets(k_lens)
    q = torch.randn(int(cu_q[-1]), H, dim) * 0.3
    k, v = torch.randn(int(cu_k[-1]), KVH, dim) * 0.3, torch.randn(int(cu_k[-1]), KVH, dim)
    position = torch.cat([torch.arange(n) for n in k_lens])
    q[:, :, -1] = 1.0  # the last column (in a split head's second part) carries the jump
    k[:, :, -1] = torch.where((position >= 16) & (position < 32), 6.5 * dim ** 0.5, 0.0)[:, None]
    want = reference.Model(H, KVH, dim, causal=causal)(q, k, v, cu_q, cu_seqlens_k=cu_k)
    got = kernel.Model(H, KVH, dim, causal=causal)(q, k, v, cu_q, cu_seqlens_k=cu_k)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)

# The launcher's kernels compiled for sm_90 with Triton's NVIDIA backend, which needs no GPU
# (bench/evaluator/target_compile.py), in a process without the interpreter: the interpreter runs code the
# compiler rejects (e.g. a function whose constexpr branches return different types). Prints the PTX lines of
# the attention kernel for a head of 72, padded (SPLIT_HEAD 0) and split (1).
_HOPPER_COMPILE = """
import sys
from pathlib import Path
import torch
from aka_tui.bench.evaluator.target_compile import install_compile_only
from aka_tui.bench.problem.module_loading import import_file
compiled = install_compile_only(90)
kernel = import_file(Path(sys.argv[1]), "varlen_kernel_compiled")
q = torch.randn(300, 4, 72, dtype=torch.bfloat16)
k, v = torch.randn(300, 2, 72, dtype=torch.bfloat16), torch.randn(300, 2, 72, dtype=torch.bfloat16)
cu = torch.tensor([0, 100, 300], dtype=torch.int32)
for split in (0, 1):
    kernel.TUNABLES["SPLIT_HEAD"] = split
    compiled.clear()
    kernel.Model(4, 2, 72)(q, k, v, cu)
    print(split, dict(compiled)["_attention_prefill_varlen_kernel"])
"""


def test_head_72_compiles_for_hopper_padded_and_split() -> None:
    run = run_compile_script(_HOPPER_COMPILE, str(REPO / "kb/family/attention/attention_prefill_varlen.py"))
    lines = dict(line.split() for line in run.stdout.split("\n") if line)
    assert int(lines["0"]) > 0 and int(lines["1"]) > 0 and lines["0"] != lines["1"], run.stdout


# A paged cache's chunks with their block ids read a chunk ahead (BT_AHEAD), at the short-batch tiles AUTO picks
# (V beside K) and at the explicit defaults, compiled for sm_90: prints the attention kernel's PTX lines per form.
_HOPPER_COMPILE_BT_AHEAD = """
import sys
from pathlib import Path
import torch
from aka_tui.bench.evaluator.target_compile import install_compile_only
from aka_tui.bench.problem.module_loading import import_file
compiled = install_compile_only(90)
kernel = import_file(Path(sys.argv[1]), "varlen_kernel_bt_ahead")
seqs, length, page = 8, 64, 16
q = torch.randn(seqs * length, 16, 128, dtype=torch.bfloat16)
pool = seqs * length // page
k, v = torch.randn(pool, page, 4, 128, dtype=torch.bfloat16), torch.randn(pool, page, 4, 128, dtype=torch.bfloat16)
cu = torch.arange(0, seqs * length + 1, length, dtype=torch.int32)
table = torch.arange(pool, dtype=torch.int32).view(seqs, -1)
used = torch.full((seqs,), length, dtype=torch.int32)
for auto in (1, 0):
    for ahead in (0, 1):
        kernel.TUNABLES.update(AUTO=auto, BT_AHEAD=ahead)
        compiled.clear()
        kernel.Model(16, 4, 128)(q, k, v, cu, seqused_k=used, block_table=table)
        print(f"{auto}-{ahead}", dict(compiled)["_attention_prefill_varlen_kernel"])
"""


def test_block_ids_a_chunk_ahead_compile_for_hopper() -> None:
    run = run_compile_script(_HOPPER_COMPILE_BT_AHEAD, str(REPO / "kb/family/attention/attention_prefill_varlen.py"))
    lines = dict(line.split() for line in run.stdout.split("\n") if line)
    assert set(lines) == {"1-0", "1-1", "0-0", "0-1"}, run.stdout
    assert all(int(n) > 0 for n in lines.values()) and lines["1-0"] != lines["1-1"], run.stdout


def test_gluon_path_takes_only_the_layouts_it_copies(modules: tuple[ModuleType, ModuleType]) -> None:
    """The Gluon path's layout rule: 16-bit values, power-of-two heads of 16-256, groups within the tile's rows,
    pages that are whole boxes of a chunk, packed caches; never a CPU tensor."""
    kernel, _ = modules
    tiles = dict(kernel.TUNABLES, GLUON=1, GLUON_BLOCK_N=32, GLUON_WARPS=4, GLUON_SPLIT=0)

    def case(page: int = 16, dim: int = 128, group: int = 4, dtype: torch.dtype = torch.bfloat16, **edit):
        q = torch.empty(10, 4 * group, dim, dtype=dtype)
        k = torch.empty(6, page, 4, dim, dtype=dtype)
        table = torch.zeros(2, 3, dtype=torch.int32)
        args = {"q": q, "k": k, "v": k, "block_table": table, "group": group, "head_dim": dim, "tiles": tiles}
        return kernel._gluon_layout_fits(**{**args, **edit})

    assert case() and case(page=64) and case(page=8) and case(dim=256) and case(dtype=torch.float16)
    assert case(group=64) and not case(group=65)                        # 64 rows a warpgroup
    assert not case(dtype=torch.float32) and not case(dim=72) and not case(dim=512)
    assert not case(page=24) and not case(page=4)                       # a page that is not a box of a chunk
    non_packed = torch.empty(6, 4, 16, 128, dtype=torch.bfloat16).transpose(1, 2)
    assert not case(k=non_packed, v=non_packed)
    assert not case(block_table=torch.zeros(3, 2, dtype=torch.int32).t())
    q = torch.empty(10, 16, 128, dtype=torch.bfloat16)
    assert not kernel._gluon_fits(q, q, q, torch.zeros(2, 3, dtype=torch.int32), 4, 128, tiles)  # CPU tensors


def test_gluon_split_head_takes_heads_of_two_power_of_two_parts(modules: tuple[ModuleType, ModuleType]) -> None:
    """GLUON_SPLIT (with SPLIT_HEAD) lets the Gluon path take a head that is not a power of two as two parts of
    16-128 MMA columns, whose cache rows are 16-byte multiples; never with the persistent or OVERLAP forms."""
    kernel, _ = modules
    split = dict(kernel.TUNABLES, GLUON=1, GLUON_BLOCK_N=32, GLUON_WARPS=4, GLUON_SPLIT=1, SPLIT_HEAD=1)
    parts = kernel._gluon_head_parts
    assert parts(72, split) == (64, 16) and parts(80, split) == (64, 16) and parts(96, split) == (64, 32)
    assert parts(192, split) == (128, 64) and parts(40, split) == (32, 16)
    assert parts(128, split) == (128, 0) and parts(256, split) == (256, 0) and parts(512, split) == (0, 0)
    assert parts(24, split) == (0, 0)                                   # 16 + 16 is no narrower than 32
    assert parts(320, split) == (0, 0)                                  # a first part of 256: no MMA of that width
    assert parts(72, dict(split, GLUON_SPLIT=0)) == (0, 0) and parts(72, dict(split, SPLIT_HEAD=0)) == (0, 0)
    assert parts(72, dict(split, GLUON_PERSIST=3)) == (0, 0) and parts(72, dict(split, GLUON_OVERLAP=1)) == (0, 0)

    def fits(dim: int, kv_heads: int = 4, tiles: dict = split) -> bool:
        q = torch.empty(10, 4 * kv_heads, dim, dtype=torch.bfloat16)
        k = torch.empty(6, 16, kv_heads, dim, dtype=torch.bfloat16)
        return kernel._gluon_layout_fits(q, k, k, torch.zeros(2, 3, dtype=torch.int32), 4, dim, tiles)

    assert fits(72) and fits(80, 1) and fits(192) and fits(36)
    assert not fits(36, 1)                                              # rows of 72 bytes: no TMA descriptor
    assert not fits(72, tiles=dict(split, GLUON_SPLIT=0))
    # a split of at most 128 MMA columns runs GLUON_SPLIT_BLOCK_N-key chunks; wider ones and whole heads GLUON_BLOCK_N
    chunk = kernel._gluon_block_n
    assert chunk(72, dict(split, GLUON_SPLIT_BLOCK_N=64)) == 64 and chunk(96, dict(split, GLUON_SPLIT_BLOCK_N=64)) == 64
    assert chunk(192, dict(split, GLUON_SPLIT_BLOCK_N=64)) == 32 and chunk(128, dict(split, GLUON_SPLIT_BLOCK_N=64)) == 32
    # ... and the page rule checks that chunk: 96-slot pages hold whole 32-key boxes, not 64-key ones
    q, k = torch.empty(10, 16, 72, dtype=torch.bfloat16), torch.empty(6, 96, 4, 72, dtype=torch.bfloat16)
    table = torch.zeros(2, 3, dtype=torch.int32)
    assert kernel._gluon_layout_fits(q, k, k, table, 4, 72, dict(split, GLUON_SPLIT_BLOCK_N=32))
    assert not kernel._gluon_layout_fits(q, k, k, table, 4, 72, dict(split, GLUON_SPLIT_BLOCK_N=64))


@pytest.mark.parametrize("causal", [True, False])
def test_key_parts_merge_into_the_attention(modules: tuple[ModuleType, ModuleType], causal: bool) -> None:
    """The second kernel of the Gluon path's split keys (GLUON_PART_CHUNKS): each key part's row (max, sum) and
    unnormalised accumulator, written here in float64 as the Gluon kernel writes them (log2 units), merge into the
    attention; rows of tiles of one part (written by the Gluon kernel itself) are left as they are. Tiles found
    through the same tile map, bottom-right causal, a decode row with many keys and a sequence that ends mid-tile."""
    kernel, _ = modules
    group, block_m, block_n, part_chunks = H // KVH, 16, 4, 2
    tile_tokens = block_m // group
    q_lens, k_lens = [1, 9, 20, 3], [30, 9, 20, 7]  # the last: two chunks, one part
    torch.manual_seed(0)
    cu = _offsets(q_lens)
    total = int(cu[-1])
    q = torch.randn(total, H, D, dtype=torch.float64)
    keys = [torch.randn(n, KVH, D, dtype=torch.float64) for n in k_lens]
    values = [torch.randn(n, KVH, D, dtype=torch.float64) for n in k_lens]
    scale = D ** -0.5 * kernel.LOG2E
    grid0 = (total + tile_tokens - 1) // tile_tokens + len(q_lens)
    prefix = torch.empty(len(q_lens) + 1, dtype=torch.int32)
    tile_map = torch.zeros(grid0, dtype=torch.int32)
    kernel._tile_prefix_map_kernel[(len(q_lens),)](cu, prefix, tile_map, tile_tokens, CHUNK=1024, MAP_CHUNK=256)
    n_parts = (max(k_lens) + block_n * part_chunks - 1) // (block_n * part_chunks)
    part_acc = torch.full((n_parts, total, H, D), float("nan"), dtype=torch.float32)
    part_m = torch.full((n_parts, total, H), float("nan"), dtype=torch.float32)
    part_l = torch.full((n_parts, total, H), float("nan"), dtype=torch.float32)
    want = torch.full((total, H, D), 7.0, dtype=torch.float64)  # rows of one-part tiles keep the guard
    for b, (q_len, kv_len) in enumerate(zip(q_lens, k_lens)):
        n_tiles = (q_len + tile_tokens - 1) // tile_tokens
        for t in range(n_tiles):  # the Gluon kernel's tile t of the sequence runs its rows from m_start
            m_start = (n_tiles - 1 - t) * tile_tokens
            n_end = min(kv_len, m_start + tile_tokens + kv_len - q_len) if causal else kv_len
            n_chunks = (n_end + block_n - 1) // block_n
            if n_chunks <= part_chunks:
                continue
            for i in range(m_start, min(m_start + tile_tokens, q_len)):
                token = int(cu[b]) + i
                last = i + kv_len - q_len if causal else kv_len - 1
                for h in range(H):
                    s = keys[b][:, h // group] @ q[token, h] * scale
                    s[last + 1:] = float("-inf")
                    want[token, h] = torch.softmax(s * 0.6931471805599453, 0) @ values[b][:, h // group]
                    for p in range(-(-n_chunks // part_chunks)):
                        part = s[p * part_chunks * block_n: min((p + 1) * part_chunks * block_n, n_end)]
                        m = part.max()
                        w = torch.exp2(part - (0.0 if m == float("-inf") else m))
                        part_m[p, token, h], part_l[p, token, h] = m, w.sum()
                        part_acc[p, token, h] = w @ values[b][p * part_chunks * block_n:][: len(w), h // group]
    out = torch.full((total, H, D), 7.0, dtype=torch.float32)
    kernel._parts_combine_kernel[(grid0, KVH)](
        out, part_acc, part_m, part_l, cu, cu, torch.tensor(k_lens, dtype=torch.int32), prefix, tile_map,
        len(q_lens), group, tile_tokens, H, total * H, out.stride(0), out.stride(1), BLOCK_M=block_m, BLOCK_D=32,
        DIM=D, BLOCK_N=block_n, PART_CHUNKS=part_chunks, CAUSAL=causal, USED=True)
    assert (want == 7.0).any() and (want != 7.0).any()  # both kinds of tile occur
    torch.testing.assert_close(out, want.float(), atol=1e-5, rtol=1e-5)
