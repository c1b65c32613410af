"""`torch._scaled_mm` (fp8 operands, tensor-wise or row/column-wise scales, a bias added after them),
`torch._grouped_mm` (rows sorted by group) and `torch._weight_int8pack_mm` (weight-only int8) on the compiler seed's
own GEMM, against the library on the CPU interpreter, and made-up problems in the published format seeded with
them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_tui.agent.compile_seed import OWN_GEMMS, extern_calls, parse_program
from aka_tui.agent.inductor_capture import capture
from tests.agent.optimize_runs import seeded_on_the_cpu
from tests.agent.test_compile_seed_units import _gemm_module


class _ScaledProduct(torch.nn.Module):
    def forward(self, a: torch.Tensor, w: torch.Tensor, sa: torch.Tensor, sw: torch.Tensor) -> torch.Tensor:
        return torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.bfloat16).float().relu()


def test_a_scaled_product_is_the_seeds_gemm_in_the_program() -> None:
    graph = capture(_ScaledProduct(), {"a": torch.randn(32, 64).to(torch.float8_e4m3fn),
                                        "w": torch.randn(48, 64).to(torch.float8_e4m3fn),
                                        "sa": torch.tensor(0.5), "sw": torch.tensor(2.0)})
    assert extern_calls(graph.source, tuple(OWN_GEMMS)) == [], extern_calls(graph.source)
    program = parse_program("key", graph, {})
    assert program.gemms == ["extern_kernels._scaled_mm"] and "_seed_scaled_mm(" in "\n".join(program.body)


@pytest.mark.parametrize("fp8", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("rowwise", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_the_seeds_scaled_gemm_matches_the_library(tmp_path: Path, fp8: str, rowwise: bool, with_bias: bool) -> None:
    """Odd sizes over several tiles and a ragged K chunk; the scales multiply the fp32 sum, the bias comes after."""
    gemm = _gemm_module(tmp_path, mm_BLOCK_M=16, mm_BLOCK_N=32, mm_BLOCK_K=16, mm_GROUP_M=2)
    torch.manual_seed(1)
    kind = getattr(torch, fp8)
    a = torch.randn(37, 50).to(kind)
    w = torch.randn(70, 50).to(kind)
    sa = torch.rand(37, 1) + 0.5 if rowwise else torch.tensor(0.75)
    sw = torch.rand(1, 70) + 0.5 if rowwise else torch.tensor(1.5)
    bias = torch.randn(70).to(torch.bfloat16) if with_bias else None
    want = torch._scaled_mm(a, w.t(), sa, sw, bias=bias, out_dtype=torch.bfloat16)
    out = torch.empty(37, 70, dtype=torch.bfloat16)
    got = gemm._seed_scaled_mm(a, w.t(), sa, sw, bias, out_dtype=torch.bfloat16, use_fast_accum=False, out=out)
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
    out32 = torch.empty(37, 70)
    got32 = gemm._seed_scaled_mm(a, w.t(), sa, sw, out_dtype=torch.float32, out=out32)
    torch.testing.assert_close(got32, torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.float32), atol=1e-3,
                               rtol=1e-4)


def test_scales_the_seeds_gemm_does_not_apply_are_a_clear_error(tmp_path: Path) -> None:
    gemm = _gemm_module(tmp_path)
    a = torch.randn(8, 256).to(torch.float8_e4m3fn)
    w = torch.randn(16, 256).to(torch.float8_e4m3fn)
    out = torch.empty(8, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="tensor-wise or row/column-wise scales"):
        gemm._seed_scaled_mm(a, w.t(), torch.rand(8, 2), torch.rand(2, 16), out=out)  # blocks of 128 along K
    with pytest.raises(ValueError, match="scale_result"):
        gemm._seed_scaled_mm(a, w.t(), torch.tensor(1.0), torch.tensor(1.0), None, torch.tensor(2.0), out=out)


def test_an_fp8_projection_is_seeded_with_the_seeds_own_gemm() -> None:
    """A per-token / per-channel fp8 projection with a bias and a SiLU gate (published format, no roofline file):
    `_scaled_mm` on the seed's GEMM beside inductor's gate kernel, and the seed reproduces the reference."""
    assert "the seed's own GEMM for _scaled_mm" in seeded_on_the_cpu("fp8_row_scaled_projection")


@pytest.mark.parametrize("ends", [[8, 16, 24, 37], [0, 13, 13, 37], [5, 6, 30, 37]])
def test_the_seeds_grouped_gemm_matches_the_library(tmp_path: Path, ends: list[int]) -> None:
    """Rows sorted by group (a mixture of experts' tokens) times each group's weight: tiles that straddle groups,
    empty groups, and groups smaller than a tile; and the batched 3-D form. The result's rows are padded to 16
    bytes as the library's."""
    gemm = _gemm_module(tmp_path, mm_BLOCK_M=16, mm_BLOCK_N=32, mm_BLOCK_K=16, mm_GROUP_M=2)
    torch.manual_seed(2)
    a = torch.randn(37, 56).bfloat16()  # the library takes bf16 only, strides of 16 bytes
    w = torch.randn(4, 70, 56).bfloat16()  # [groups, out, in], used transposed
    offs = torch.tensor(ends, dtype=torch.int32)
    want = torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)
    got = gemm._seed_grouped_mm(a, w.transpose(-2, -1), offs, out_dtype=None)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
    x = torch.randn(4, 9, 56).bfloat16()
    torch.testing.assert_close(gemm._seed_grouped_mm(x, w.transpose(-2, -1)),
                               torch._grouped_mm(x, w.transpose(-2, -1)), atol=2e-2, rtol=2e-2)


class _GroupedProjection(torch.nn.Module):
    def forward(self, rows: torch.Tensor, weights: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(torch._grouped_mm(rows, weights.transpose(-2, -1), offs=ends)) * 2.0


def test_a_grouped_product_is_the_seeds_gemm_in_the_program() -> None:
    graph = capture(_GroupedProjection(), {"rows": torch.randn(32, 64).bfloat16(),
                                           "weights": torch.randn(4, 48, 64).bfloat16(),
                                           "ends": torch.tensor([8, 16, 24, 32], dtype=torch.int32)})
    assert extern_calls(graph.source, tuple(OWN_GEMMS)) == [], extern_calls(graph.source)
    program = parse_program("key", graph, {})
    assert program.gemms == ["extern_kernels._grouped_mm"] and "_seed_grouped_mm(" in "\n".join(program.body)


def test_an_expert_mlp_on_grouped_products_is_seeded() -> None:
    """A mixture of experts' MLP on rows sorted by expert (two `_grouped_mm`s, SiLU-and-mul between; published
    format): both products on the seed's GEMM, and the seed reproduces the reference."""
    assert "the seed's own GEMM for _grouped_mm" in seeded_on_the_cpu("grouped_expert_mlp")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_the_seeds_int8_weight_gemm_matches_the_library(tmp_path: Path, dtype: torch.dtype) -> None:
    """Weight-only int8 (`_weight_int8pack_mm`): the weights taken as the activations' dtype, a scale per output
    column, the result in the activations' dtype."""
    gemm = _gemm_module(tmp_path, mm_BLOCK_M=16, mm_BLOCK_N=32, mm_BLOCK_K=16, mm_GROUP_M=2)
    torch.manual_seed(3)
    x = (torch.randn(37, 64) * 0.1).to(dtype)  # the CPU library crashes for K = 56
    w = torch.randint(-128, 128, (70, 64), dtype=torch.int8)
    scales = (torch.rand(70) * 0.01).to(dtype)
    want = torch._weight_int8pack_mm(x, w, scales)
    got = gemm._seed_weight_int8pack_mm(x, w, scales)
    assert got.dtype == want.dtype
    tolerance = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 2e-2, "rtol": 2e-2}
    torch.testing.assert_close(got, want, **tolerance)


class _Int8WeightProjection(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(torch._weight_int8pack_mm(x, w, scales))


def test_an_int8_weight_projection_is_the_seeds_gemm_in_the_program() -> None:
    graph = capture(_Int8WeightProjection(), {"x": torch.randn(16, 64).bfloat16(),
                                              "w": torch.randint(-128, 128, (48, 64), dtype=torch.int8),
                                              "scales": torch.rand(48).bfloat16()})
    assert extern_calls(graph.source, tuple(OWN_GEMMS)) == [], extern_calls(graph.source)
    program = parse_program("key", graph, {})
    assert program.gemms == ["extern_kernels._weight_int8pack_mm"]


def test_a_weight_only_int8_projection_is_seeded() -> None:
    assert "the seed's own GEMM for _weight_int8pack_mm" in seeded_on_the_cpu("int8_weight_projection")
