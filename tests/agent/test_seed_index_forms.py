"""More reference forms inductor leaves to libraries, written by the compiler seed as its own kernels: boolean
indexing and assignment (the mask's coordinates, then an integer gather or scatter), bincount (adds at the
counted positions), unique (places in the stable ranking), a sort of integers, an int8 matrix product (the
seed's GEMM accumulating in int32), and a returned bitcast view (a torch view, not a library call)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_tui.agent.compile_seed import OWN_GEMMS, _plain_views, extern_calls, parse_program
from aka_tui.agent.inductor_capture import capture
from aka_tui.agent.seed_data_dependent import (
    counts_by_atomic_adds,
    index_by_coordinates,
    index_put_by_coordinates,
    unique_by_rank,
)
from aka_tui.agent.seed_decompositions import rank_sort
from tests.agent.optimize_runs import UNSEEN, started_correct_and_real


def test_boolean_indexing_is_a_gather_at_the_masks_coordinates() -> None:
    torch.manual_seed(0)
    x = torch.randn(6, 5, 4)
    rows = torch.rand(6) > 0.4
    plane = torch.rand(6, 5) > 0.5
    columns = torch.tensor([True, False, True, True])
    assert torch.equal(index_by_coordinates(x, [rows]), x[rows])
    assert torch.equal(index_by_coordinates(x, [plane]), x[plane])  # a 2-D mask indexes two dimensions
    assert torch.equal(index_by_coordinates(x, [None, None, columns]), x[:, :, columns])
    assert torch.equal(index_by_coordinates(x, [rows, torch.tensor([1])]), x[rows, torch.tensor([1])])
    assert torch.equal(index_by_coordinates(x, [torch.zeros(6, dtype=torch.bool)]), x[:0])
    assert index_by_coordinates(x, [torch.tensor([0, 2])]) is NotImplemented  # integer indices: inductor's own


def test_a_masked_assignment_of_values_scatters_them_at_the_masks_coordinates() -> None:
    torch.manual_seed(1)
    x = torch.randn(5, 6)
    mask = torch.rand(5, 6) > 0.5
    values = torch.randn(int(mask.sum()))
    want = x.clone()
    want[mask] = values
    assert torch.equal(index_put_by_coordinates(x, [mask], values), want)
    want_added = x.clone().index_put_((mask,), values, accumulate=True)
    torch.testing.assert_close(index_put_by_coordinates(x, [mask], values, True), want_added)
    assert index_put_by_coordinates(x, [mask], torch.tensor(0.0)) is NotImplemented  # a select inductor writes


@pytest.mark.parametrize("weights_dtype", [None, torch.float32, torch.float64, torch.bfloat16])
def test_bincount_is_adds_at_the_counted_positions_with_the_librarys_length_and_dtype(weights_dtype) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(2)
    ids = torch.randint(0, 13, (70,))
    weights = None if weights_dtype is None else torch.rand(70).to(weights_dtype)
    for minlength in (0, 5, 30):
        want = torch.bincount(ids, weights, minlength)
        got = counts_by_atomic_adds(ids, weights, minlength)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape)
        torch.testing.assert_close(got, want)
    assert counts_by_atomic_adds(ids.view(7, 10)) is NotImplemented


def test_unique_is_the_distinct_places_of_the_stable_ranking() -> None:
    torch.manual_seed(3)
    ids = torch.randint(-4, 9, (5, 7))
    values, inverse, counts = unique_by_rank(ids, True, True, True)
    want = torch.unique(ids, return_inverse=True, return_counts=True)
    for got, expected in zip((values, inverse, counts), want):
        assert torch.equal(got, expected), (got, expected)
    nan = float("nan")
    x = torch.tensor([2.0, nan, -1.0, 2.0, nan, 0.5])
    values, inverse, counts = unique_by_rank(x, True, False, True)
    want_values, want_counts = torch.unique(x, return_counts=True)  # each NaN its own value, last
    assert torch.allclose(values, want_values, equal_nan=True)
    assert torch.equal(counts, want_counts) and inverse.numel() == 0


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.bool])
@pytest.mark.parametrize("descending", [False, True])
def test_a_sort_of_integers_is_the_same_stable_ranking(dtype: torch.dtype, descending: bool) -> None:
    torch.manual_seed(4)
    x = torch.randint(0, 2 if dtype == torch.bool else 6, (3, 17)).to(dtype)
    values, indices = rank_sort(x, -1, descending)
    want = torch.sort(x, dim=-1, descending=descending, stable=True)
    assert torch.equal(values, want.values) and torch.equal(indices, want.indices)


def test_the_seeds_gemm_multiplies_int8_operands_exactly_in_int32(tmp_path: Path) -> None:
    """`_int_mm`'s product on ragged tiles and a transposed operand, equal to torch's to the unit."""
    from tests.agent.test_compile_seed_units import _gemm_module

    gemm = _gemm_module(tmp_path, mm_BLOCK_M=16, mm_BLOCK_N=32, mm_BLOCK_K=16, mm_GROUP_M=2)
    torch.manual_seed(5)
    a = torch.randint(-128, 128, (37, 48), dtype=torch.int8)
    b = torch.randint(-128, 128, (40, 48), dtype=torch.int8).t()
    out = torch.empty(37, 40, dtype=torch.int32)
    assert torch.equal(gemm._seed_int_mm(a, b, out=out), torch._int_mm(a, b))


def test_a_returned_bitcast_view_is_a_torch_view_and_anything_else_stays_a_library_call() -> None:
    assert _plain_views("return (aten.view.dtype(reinterpret_tensor(buf3, (s0, 2), (2, 1), 0), torch.int64), )") \
        == "return ((reinterpret_tensor(buf3, (s0, 2), (2, 1), 0)).view(torch.int64), )"
    assert _plain_views("x = aten.view.dtype(buf7, torch.float32)") == "x = (buf7).view(torch.float32)"
    assert _plain_views("x = aten.view.dtype(buf7)") == "x = aten.view.dtype(buf7)"


class _Compaction(torch.nn.Module):
    def forward(self, x: torch.Tensor, slots: torch.Tensor, cache: torch.Tensor) -> tuple[torch.Tensor, ...]:
        valid = slots >= 0
        cache[slots[valid]] = x[valid] * 2.0
        return cache, torch.bincount(slots[valid], minlength=cache.shape[0])


class _Grouping(torch.nn.Module):
    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values, inverse, counts = torch.unique(ids, return_inverse=True, return_counts=True)
        return values, inverse, counts, torch.argsort(ids.flatten(), stable=True)


class _Int8Product(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return torch._int_mm(a, b).float() * scale


def test_these_forms_lower_to_own_kernels_and_the_seeds_gemm() -> None:
    slots = torch.tensor([3, -1, 0, 7, -1, 5, 1, 2])
    graphs = {
        "compaction": capture(_Compaction(), {"x": torch.randn(8, 4), "slots": slots, "cache": torch.zeros(9, 4)}),
        "grouping": capture(_Grouping(), {"ids": torch.randint(0, 6, (4, 5))}),
        "int8": capture(_Int8Product(), {"a": torch.randint(-128, 128, (32, 64), dtype=torch.int8),
                                         "b": torch.randint(-128, 128, (64, 32), dtype=torch.int8),
                                         "scale": torch.rand(32, 1)}),
    }
    for name, graph in graphs.items():
        assert extern_calls(graph.source, tuple(OWN_GEMMS)) == [], (name, extern_calls(graph.source))
    assert "aten.view.dtype(" in graphs["grouping"].source  # the ranking's int64 indices, returned as a view
    program = parse_program("key", graphs["int8"], {})
    assert program.gemms == ["extern_kernels._int_mm"] and "_seed_int_mm(" in "\n".join(program.body)


@pytest.mark.slow
def test_optimize_seeds_an_expert_ordering_with_integer_sort_and_counts(tmp_path: Path) -> None:
    """Token rows gathered in expert order (a stable argsort of integer ids, a bincount for the offsets):
    every library call is the seed's own kernels, correct and real, and the start compiles for sm_90."""
    started_correct_and_real(UNSEEN / "expert_row_order", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)", "--compile-for", "sm_90", "--transfer-budget", "0")


@pytest.mark.slow
def test_optimize_seeds_an_int8_gemm_held_to_its_outputs_own_tolerance(tmp_path: Path) -> None:
    """`torch._int_mm` on the seed's GEMM (int8 dots, int32 sums) with a scaled bf16 epilogue. The problem's
    dtype is int8: its bf16 output is checked at bf16's tolerance, as the evaluator checks it (held to int8's,
    exactness, one bf16 rounding of inductor's fused epilogue refused the seed)."""
    result = started_correct_and_real(UNSEEN / "int8_row_scaled_gemm", tmp_path / "sessions",
                                       "the seed's own GEMM for _int_mm", "compiler seed (inductor)",
                                       "--transfer-budget", "0")
    assert all(name.startswith("_seed_") for s in result["shapes"] for name in s["audit"]["own_kernels"])


def test_a_top_k_of_integers_is_the_head_of_the_ranking() -> None:
    from aka_tui.agent.seed_decompositions import selection_topk

    torch.manual_seed(6)
    distinct = torch.stack([torch.randperm(50) for _ in range(4)]).to(torch.int32) - 20
    for largest in (True, False):
        values, indices = selection_topk(distinct, 5, -1, largest)
        want = torch.topk(distinct, 5, dim=-1, largest=largest)
        assert torch.equal(values, want.values) and torch.equal(indices, want.indices)
    tied = torch.randint(0, 4, (3, 30))
    values, indices = selection_topk(tied, 7, 1)
    assert torch.equal(values, torch.topk(tied, 7, dim=1).values)
    assert torch.equal(torch.gather(tied, 1, indices), values)  # ties: any of the tied places is torch's answer
