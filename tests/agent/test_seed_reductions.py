"""The compiler seed's decompositions of reductions inductor leaves to the library (scatter_reduce, index_reduce,
kthvalue, histc, cdist, embedding_bag): each against torch's own result, each lowered to inductor's own kernels, and a made-up
problem in the published format seeded from them."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from aka_tui.agent import seed_reductions as reductions
from aka_tui.agent.compile_seed import OWN_GEMMS, extern_calls
from aka_tui.agent.inductor_capture import capture
from tests.agent.optimize_runs import seeded_on_the_cpu

_TOLERANCE = {torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2}}


def _values(shape: tuple[int, ...], dtype: torch.dtype, positive: bool) -> torch.Tensor:
    if not dtype.is_floating_point:
        return torch.randint(-5, 6, shape, dtype=dtype)
    return ((torch.rand(shape) + 0.5) if positive else torch.randn(shape) * 3).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_and_index_reduce_match_torch(dtype: torch.dtype, reduce: str, include_self: bool) -> None:
    """Along the last and the first dimension, an index smaller than the destination (untouched slices keep their
    values), integer means rounded down as torch's."""
    torch.manual_seed(3)
    tolerance = _TOLERANCE.get(dtype, {"atol": 1e-5, "rtol": 1e-5})
    positive = reduce == "prod"
    for shape, index_shape, dim in [((6, 5), (6, 40), 1), ((7, 4), (3, 4), 0), ((6, 9, 3), (4, 12, 2), 1)]:
        x, src = _values(shape, dtype, positive), _values(index_shape, dtype, positive)
        index = torch.randint(0, shape[dim], index_shape)
        got = reductions.scatter_reduce_by_comparison(x, dim, index, src, reduce, include_self=include_self)
        torch.testing.assert_close(got, x.scatter_reduce(dim, index, src, reduce, include_self=include_self),
                                   **tolerance)
    if reduce == "sum":
        return  # index_reduce has no sum
    x, source, ids = _values((10, 6), dtype, positive), _values((40, 6), dtype, positive), torch.randint(0, 10, (40,))
    with warnings.catch_warnings():  # index_reduce is "in beta" (warned once a process)
        warnings.simplefilter("ignore", UserWarning)
        want = x.index_reduce(0, ids, source, reduce, include_self=include_self)
    got = reductions.index_reduce_by_comparison(x, 0, ids, source, reduce, include_self=include_self)
    torch.testing.assert_close(got, want, **tolerance)


def test_kthvalue_histc_and_cdist_match_torch() -> None:
    torch.manual_seed(4)
    x = torch.randn(5, 33)
    for k, dim, keepdim in [(4, -1, False), (2, 0, True)]:
        value, index = reductions.kthvalue_by_rank(x, k, dim, keepdim)
        want = torch.kthvalue(x, k, dim, keepdim)
        assert torch.equal(value, want.values) and torch.equal(index, want.indices)
    for bins, lo, hi in [(10, -2, 2), (7, 0, 0), (16, -1.0, 0.5)]:  # 0, 0: the data's own range
        torch.testing.assert_close(reductions.histc_by_adds(x, bins, lo, hi), torch.histc(x, bins, lo, hi))
    a, b = torch.randn(2, 7, 16), torch.randn(2, 9, 16)
    for p in [0.0, 1.0, 2.0, 3.0, float("inf")]:
        torch.testing.assert_close(reductions.cdist_directly(a, b, p), torch.cdist(a, b, p), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bags_match_torch(mode: str, include_last_offset: bool, padding_idx: int | None) -> None:
    """Bags of gathered rows: an empty bag, a padding index left out of the sum and of the mean's count, per-sample
    weights (sum mode), offsets in CSR form (the last one the number of indices)."""
    import torch.nn.functional as F

    torch.manual_seed(5)
    weight, indices = torch.randn(20, 8), torch.randint(0, 20, (30,))
    offsets = torch.tensor([0, 4, 4, 17, 30] if include_last_offset else [0, 4, 4, 17])
    for per_sample in ([None, torch.rand(30)] if mode == "sum" else [None]):
        want = F.embedding_bag(indices, weight, offsets, mode=mode, per_sample_weights=per_sample,
                               include_last_offset=include_last_offset, padding_idx=padding_idx)
        got = reductions.embedding_bag_by_adds(weight, indices, offsets, False, ["sum", "mean"].index(mode), False,
                                               per_sample, include_last_offset,
                                               -1 if padding_idx is None else padding_idx)[0]
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def _module(fn: Any) -> torch.nn.Module:
    class Wrapped(torch.nn.Module):
        def forward(self, a0: torch.Tensor, a1: torch.Tensor | None = None) -> Any:
            return fn(a0) if a1 is None else fn(a0, a1)

    return Wrapped()


def test_these_reductions_lower_to_inductors_own_kernels() -> None:
    x, idx, ids = torch.randn(6, 40), torch.randint(0, 5, (6, 40)), torch.randint(0, 10, (40,))
    forms = {
        "scatter_amax": (lambda x, i: torch.zeros(6, 5).scatter_reduce(1, i, x, "amax", include_self=False), (x, idx)),
        "scatter_mean": (lambda x, i: torch.ones(6, 5).scatter_reduce(1, i, x, "mean"), (x, idx)),
        "index_prod": (lambda x, i: torch.ones(10, 6).index_reduce(0, i, x.t(), "prod"), (x, ids)),
        "kthvalue": (lambda x: torch.kthvalue(x, 3, dim=-1), (x,)),
        "histc": (lambda x: torch.histc(x, bins=10, min=-3, max=3), (x,)),
        "cdist": (lambda x: torch.cdist(x, x), (x,)),
        "embedding_bag": (lambda i, w: torch.nn.functional.embedding_bag(i.view(5, 8), w, mode="mean"),
                          (ids, torch.randn(10, 4))),
    }
    for name, (fn, args) in forms.items():
        graph = capture(_module(fn), {f"a{i}": a for i, a in enumerate(args)})
        assert extern_calls(graph.source, tuple(OWN_GEMMS)) == [], (name, extern_calls(graph.source))


def test_routed_rows_combined_by_scatter_reduce_are_seeded() -> None:
    """Rows combined into tokens with scatter_reduce (a sum and a peak, the destination left out) and a kthvalue
    per token: the seed is inductor's own kernels, and it reproduces the reference."""
    reason = seeded_on_the_cpu("routed_rows_scatter_combine")
    assert "seed's own GEMM" not in reason and "Triton kernel(s)" in reason
