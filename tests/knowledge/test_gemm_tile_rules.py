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
