"""The bf16 GEMM launcher's tile rules by batch size: decode (small M), mid M, large M, and between them fewer rows
per tile where the default tiles would not fill the GPU once; and the under-wave tiles compute the product
(CPU interpreter)."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

KERNEL = import_file(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py", "gemm_tile_rules")
CFG = KERNEL.TUNABLES


@pytest.mark.parametrize("m, n, sms, want", [
    (300, 2048, 132, (64, 128, 64, 4, 4, False)),     # 48 default tiles on 132 SMs: 64-row tiles, 4 warps
    (300, 2048, 40, (128, 128, 64, 8, 4, False)),     # 48 tiles fill 40 SMs: the default tiles
    (1024, 4096, 132, (128, 128, 64, 8, 4, False)),   # 256 tiles: the default tiles
    (300, 2048, 0, (128, 128, 64, 8, 4, False)),      # SM count not known (not a CUDA tensor)
    (64, 2048, 132, (64, 64, 256, 4, 4, False)),      # decode rule first
    (256, 2048, 132, (128, 128, 128, 8, 4, False)),   # mid-M rule first
    (4096, 512, 132, (256, 128, 64, 8, 4, True)),     # large-M rule first
])
def test_tile_rules(m: int, n: int, sms: int, want: tuple) -> None:
    assert KERNEL._tiles(m, n, CFG, sms) == want


def test_under_wave_tiles_off_or_split() -> None:
    assert KERNEL._tiles(300, 2048, dict(CFG, UNDER_WAVE_BLOCK_M=0), 132)[0] == 128
    assert KERNEL._tiles(300, 2048, dict(CFG, SPLIT_K=2), 132)[0] == 128  # a split grid has its own programs


def test_under_wave_tiles_compute_the_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows beyond a tile's edge and every epilogue term, at the under-wave tiles (scaled down to the interpreter:
    16-row tiles where the default is 32, a GPU of many SMs)."""
    monkeypatch.setattr(KERNEL, "_sm_count", lambda device: 1000)
    cfg = dict(CFG, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, SMALL_M_MAX=0, MID_M_MAX=0, LARGE_M_MIN=0,
               UNDER_WAVE_BLOCK_M=16)
    assert KERNEL._tiles(70, 40, cfg, 1000)[0] == 16
    torch.manual_seed(0)
    x, w, b, r = torch.randn(70, 52), torch.randn(40, 52) / 52 ** 0.5, torch.randn(40), torch.randn(70, 40)
    got = KERNEL.launch_gemm_bf16_linear_epilogue(x, w, b, r, "silu", cfg)
    z = x.double() @ w.double().T + b.double()
    torch.testing.assert_close(got.double(), z * torch.sigmoid(z) + r.double(), rtol=1e-4, atol=1e-4)


def test_float32_operands_as_three_tf32_products_compute_the_product() -> None:
    """FP32_TF32X3 (float32 operands through three TF32 products) on the pointer and the split paths: the
    interpreter computes in float32, so this checks the launch and the epilogue, not TF32 rounding (the GPU's)."""
    torch.manual_seed(1)
    x, w, b = torch.randn(70, 52), torch.randn(40, 52) / 52 ** 0.5, torch.randn(40)
    z = x.double() @ w.double().T + b.double()
    for split in (1, 2):
        cfg = dict(CFG, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, SMALL_M_MAX=0, MID_M_MAX=0, LARGE_M_MIN=0,
                   SPLIT_K=split, FP32_TF32X3=1, FP32_TILES=0)
        got = KERNEL.launch_gemm_bf16_linear_epilogue(x, w, b, None, "gelu_tanh", cfg)
        torch.testing.assert_close(got.double(), torch.nn.functional.gelu(z, approximate="tanh"), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("m, n, tf32x3, sms, want", [
    (4096, 4096, True, 132, (128, 128, 32, 8, 3, False)),   # no large-M rule for float32
    (300, 2048, True, 132, (64, 128, 32, 4, 3, False)),     # 48 tiles of 128 rows on 132 SMs
    (4096, 4096, False, 132, (128, 128, 32, 4, 3, False)),  # IEEE dots: 4 warps
    (300, 2048, True, 0, (128, 128, 32, 8, 3, False)),      # SM count not known
])
def test_float32_tile_rule(m: int, n: int, tf32x3: bool, sms: int, want: tuple) -> None:
    assert KERNEL._fp32_tiles(m, n, tf32x3, sms) == want


def test_float32_operands_at_their_tiles_compute_the_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's defaults on float32 operands take the float32 tiles (TF32 products on), bias and residual
    in the epilogue; FP32_TILES 0 keeps the configured tiles."""
    seen = []
    rule = KERNEL._fp32_tiles
    monkeypatch.setattr(KERNEL, "_fp32_tiles", lambda *a: seen.append(a) or rule(*a))
    torch.manual_seed(2)
    x, w, b, r = torch.randn(70, 52), torch.randn(40, 52) / 52 ** 0.5, torch.randn(40), torch.randn(70, 40)
    got = KERNEL.launch_gemm_bf16_linear_epilogue(x, w, b, r, "none")
    assert seen == [(70, 40, True, 0)]
    torch.testing.assert_close(got.double(), x.double() @ w.double().T + b.double() + r.double(), rtol=1e-4,
                               atol=1e-4)
    KERNEL.launch_gemm_bf16_linear_epilogue(x, w, b, r, "none", dict(CFG, FP32_TILES=0))
    assert len(seen) == 1


_COMPILE_TF32X3 = """
import sys
from pathlib import Path
import torch
from aka_tui.bench.evaluator.target_compile import install_compile_only
from aka_tui.bench.problem.module_loading import import_file
compiled = install_compile_only(90)
kernel = import_file(Path(sys.argv[1]), "gemm_tf32x3")
x, w = torch.randn(300, 1024), torch.randn(2048, 1024)
for tf32x3 in (0, 1):
    compiled.clear()
    kernel.launch_gemm_bf16_linear_epilogue(x, w, None, None, "sigmoid", dict(kernel.TUNABLES, FP32_TF32X3=tf32x3))
    print(dict(compiled)["_gemm_bf16_linear_epilogue_kernel"])
"""


def test_float32_operands_compile_both_ways_for_hopper() -> None:
    """IEEE fp32 dots and three TF32 products are different kernels for sm_90 (the latter on tensor cores)."""
    from tests.knowledge.hopper_compile import run_compile_script

    run = run_compile_script(_COMPILE_TF32X3, str(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py"))
    ieee, tf32x3 = (int(n) for n in run.stdout.split())
    assert ieee > 0 and tf32x3 > 0 and ieee != tf32x3, run.stdout
