"""The paged decode reference kernel on both cache layouts its reference defines (CPU interpreter, float32):
[blocks, block_size, kv_heads, head_dim], and vLLM's split layout (K [blocks, kv_heads, head_dim / x,
block_size, x], V [blocks, kv_heads, head_dim, block_size]); sizes read from the tensors."""

from __future__ import annotations

from types import ModuleType

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


def _record_launches(kernel: ModuleType, keys: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The attention kernel's launches, recorded (their `keys` keyword arguments) and then made."""
    attention, launches = kernel._attention_paged_decode_kernel, []

    class Recorded:
        def __getitem__(self, grid: tuple):  # type: ignore[no-untyped-def]
            def launch(*args, **kwargs):  # type: ignore[no-untyped-def]
                launches.append({k: v for k, v in kwargs.items() if k in keys})
                return attention[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(kernel, "_attention_paged_decode_kernel", Recorded())
    return launches


@pytest.mark.parametrize("maxnreg", [0, 96])
def test_register_cap_reaches_the_attention_launch_only_when_set(maxnreg: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """MAXNREG 0 leaves the register count to the compiler; a cap goes to the attention kernel's launch (as
    Triton's `maxnreg` option), and the result is the reference's either way."""
    kernel = import_file(REPO / "kb/family/attention/attention_paged_decode.py", "paged_kernel")
    reference = import_file(REPO / "problems/attention_paged_decode/reference.py", "paged_reference")
    kernel.TUNABLES.update(SPLIT_KV=0, BLOCK_N=8, PAGE_TILES=1, MAXNREG=maxnreg)
    options = _record_launches(kernel, ("maxnreg", "num_warps"), monkeypatch)
    torch.manual_seed(2)
    q = torch.randn(2, 4, 16)
    k, v = torch.randn(6, 4, 2, 16), torch.randn(6, 4, 2, 16)
    table = torch.tensor([[0, 1, 2], [3, 4, 5]], dtype=torch.int32)
    lengths = torch.tensor([9, 6], dtype=torch.int32)
    got = kernel.Model()(q, k, v, table, lengths)
    torch.testing.assert_close(got, reference.Model()(q, k, v, table, lengths), atol=1e-5, rtol=1e-5)
    assert options == [{"num_warps": 4, "maxnreg": 96} if maxnreg else {"num_warps": 4}]


@pytest.mark.parametrize(("batch", "short_context", "want"), [
    (34, 1, {"BLOCK_N": 16, "maxnreg": 96}),  # 34 x 4 programs (>= 132 SMs), each context one 32-token chunk
    (34, 0, {"BLOCK_N": 32}),                 # the rule off
    (2, 1, {"BLOCK_N": 32}),                  # 8 programs: the grid does not fill the SMs
])
def test_one_chunk_contexts_on_a_full_grid_run_half_chunks_under_a_cap(batch: int, short_context: int, want: dict,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """SHORT_CONTEXT: where every program's context fits one chunk and the grid fills the SMs, the launch halves
    the chunk and caps the registers; otherwise it launches the tunables as they are. Same result either way."""
    kernel = import_file(REPO / "kb/family/attention/attention_paged_decode.py", "paged_kernel")
    reference = import_file(REPO / "problems/attention_paged_decode/reference.py", "paged_reference")
    kernel.TUNABLES.update(SPLIT_KV=1, PARTITION=512, BLOCK_N=32, PAGE_TILES=1, MAXNREG=0,
                           SHORT_CONTEXT=short_context)
    launched = _record_launches(kernel, ("BLOCK_N", "maxnreg"), monkeypatch)
    torch.manual_seed(3)
    heads, kv_heads, dim, page = 8, 4, 16, 4
    q = torch.randn(batch, heads, dim)
    k, v = torch.randn(batch * 8, page, kv_heads, dim), torch.randn(batch * 8, page, kv_heads, dim)
    table = torch.randperm(batch * 8).view(batch, 8).to(torch.int32)
    lengths = torch.randint(1, 33, (batch,), dtype=torch.int32)
    got = kernel.Model()(q, k, v, table, lengths)
    torch.testing.assert_close(got, reference.Model()(q, k, v, table, lengths), atol=1e-5, rtol=1e-5)
    assert launched == [want]


# The split layout at the short-context tiles the register cap is for (BLOCK_N 32, cap 96), compiled for sm_90.
_HOPPER_COMPILE_CAP = """
import sys
from pathlib import Path
import torch
from aka_tui.bench.evaluator.target_compile import install_compile_only
from aka_tui.bench.problem.module_loading import import_file
compiled = install_compile_only(90)
kernel = import_file(Path(sys.argv[1]), "paged_kernel_capped")
batch, heads, kv_heads, dim, page, x, ctx = 8, 16, 16, 128, 16, 8, 64
blocks = batch * ctx // page
q = torch.randn(batch, heads, dim, dtype=torch.bfloat16)
k = torch.randn(blocks, kv_heads, dim // x, page, x, dtype=torch.bfloat16)
v = torch.randn(blocks, kv_heads, dim, page, dtype=torch.bfloat16)
table = torch.arange(blocks, dtype=torch.int32).view(batch, -1)
lengths = torch.full((batch,), ctx, dtype=torch.int32)
kernel.TUNABLES.update(BLOCK_N=32, MAXNREG=96)
kernel.Model()(q, k, v, table, lengths)
print(dict(compiled)["_attention_paged_decode_kernel"])
"""


def test_register_cap_compiles_for_hopper() -> None:
    from tests.knowledge.hopper_compile import run_compile_script

    run = run_compile_script(_HOPPER_COMPILE_CAP, str(REPO / "kb/family/attention/attention_paged_decode.py"))
    assert int(run.stdout.split()[-1]) > 0, run.stdout
