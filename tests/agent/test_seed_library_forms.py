"""Reference forms inductor leaves to libraries, written by the compiler seed as its own kernels: a dense or
grouped convolution (a GEMM over its windows), a baddbmm (the seed's GEMM with its bias), a nonzero or
masked_select (a search of the running count, the count read back on the host), a median (a place in the
stable ranking)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from aka_tui.agent.compile_seed import OWN_GEMMS, extern_calls
from aka_tui.agent.inductor_capture import capture
from aka_tui.agent.seed_data_dependent import masked_select_by_search, nonzero_by_search
from aka_tui.agent.seed_decompositions import convolution_as_products, median_by_rank, whole_median_by_rank
from tests.agent.optimize_runs import UNSEEN, started_correct_and_real


@pytest.mark.parametrize("spatial, groups, stride, padding, dilation, bias", [
    (1, 1, [1], [1], [1], True), (1, 2, [2], [0], [2], False), (2, 1, [1, 2], [1, 0], [1, 1], True),
    (2, 3, [1, 1], [1, 1], [2, 1], False), (1, 6, [1], [2], [1], True)])
def test_a_convolution_is_a_product_over_its_windows(spatial: int, groups: int, stride: list[int],
                                                      padding: list[int], dilation: list[int], bias: bool) -> None:
    """Dense, grouped and depthwise (the last: the sum over taps), 1-D and 2-D, with torch's values."""
    x = torch.randn((2, 6) + (11,) * spatial)
    out_channels = {1: 4, 2: 4, 3: 9, 6: 6}[groups]
    w = torch.randn((out_channels, 6 // groups) + (3,) * spatial)
    b = torch.randn(out_channels) if bias else None
    conv = F.conv1d if spatial == 1 else F.conv2d
    want = conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    got = convolution_as_products(x, w, b, stride, padding, dilation, False, [0] * spatial, groups)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert convolution_as_products(x, w, b, stride, padding, dilation, True, [0] * spatial, groups) \
        is NotImplemented  # transposed: left to inductor


def test_a_dense_convolution_and_a_baddbmm_lower_to_own_kernels_and_the_seeds_gemm() -> None:
    class Mixing(torch.nn.Module):
        def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return F.gelu(F.conv1d(x, w, padding=1))

    class Scores(torch.nn.Module):
        def forward(self, bias: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            return torch.baddbmm(bias, q, k.transpose(1, 2), alpha=q.shape[-1] ** -0.5).softmax(-1)

    mixing = capture(Mixing(), {"x": torch.randn(2, 8, 20), "w": torch.randn(8, 8, 3)})
    scores = capture(Scores(), {"bias": torch.randn(2, 16, 16), "q": torch.randn(2, 16, 32),
                                "k": torch.randn(2, 16, 32)})
    for graph in (mixing, scores):
        assert extern_calls(graph.source, tuple(OWN_GEMMS)) == [], extern_calls(graph.source)
        assert "@triton.jit" in graph.source
    assert "extern_kernels.baddbmm(" in scores.source


def test_nonzero_and_masked_select_are_searches_of_the_running_count() -> None:
    for shape in [(40,), (3, 5), (2, 3, 4), (0,), (4, 0)]:
        x = (torch.rand(shape) > 0.5).float() * torch.randn(shape)
        assert torch.equal(nonzero_by_search(x), torch.nonzero(x)), shape
    x, mask = torch.randn(4, 6), torch.rand(6) > 0.5
    assert torch.equal(masked_select_by_search(x, mask), torch.masked_select(x, mask))
    assert nonzero_by_search(torch.tensor(1.0)) is NotImplemented

    class Picked(torch.nn.Module):
        def forward(self, x: torch.Tensor, threshold: float) -> torch.Tensor:
            return torch.masked_select(x, x > threshold).sum().reshape(1)

    graph = capture(Picked(), {"x": torch.randn(8, 32), "threshold": 0.5})
    assert not extern_calls(graph.source), extern_calls(graph.source)


def test_a_median_is_the_lower_middle_of_the_stable_ranking() -> None:
    """torch's values and indices: the first of equal values on the CPU, NaN at the first NaN's index."""
    nan = float("nan")
    for x in (torch.tensor([[3.0, nan, 1.0, nan, 2.0], [5.0, 1.0, 1.0, 1.0, 4.0]]),
              torch.tensor([2.0, 1.0, 2.0, 2.0, 3.0, 1.0]), torch.randn(3, 7, 4)):
        for dim in range(x.dim()):
            for keepdim in (False, True):
                value, index = median_by_rank(x, dim, keepdim)
                want = torch.median(x, dim, keepdim=keepdim)
                assert torch.equal(value.nan_to_num(9.0), want.values.nan_to_num(9.0)), (x, dim)
                assert torch.equal(index, want.indices), (x, dim)
    x = torch.randn(5, 8)
    assert torch.equal(whole_median_by_rank(x), torch.median(x))

    class Middle(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.median(x, dim=-1).values

    graph = capture(Middle(), {"x": torch.randn(6, 33)})
    assert not extern_calls(graph.source), extern_calls(graph.source)


@pytest.mark.slow
def test_optimize_seeds_a_compaction_whose_size_is_data_dependent(tmp_path: Path) -> None:
    """The kept tokens' rows (`torch.nonzero` then indexing): the seed's search reads the count back on the
    host, and the GPU compile check replays that read."""
    started_correct_and_real(UNSEEN / "kept_token_rows", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)", "--compile-for", "sm_90")
