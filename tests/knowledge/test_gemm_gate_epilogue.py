"""The bf16 GEMM's gate epilogue (y = act(x W^T + b) * gate + residual, a gated projection) on every path the
interpreter runs (tiles, split K with its reduce kernel, TMA), against the suite reference that defines it."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import PROBLEMS, REPO

KERNEL = import_file(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py", "gemm_gate_epilogue_kernel")
REFERENCE = import_file(PROBLEMS / "gemm_bf16_linear_epilogue" / "reference.py", "gemm_gate_epilogue_reference")
PATHS = {"tiles": {"SPLIT_K": 1, "TMA": 0}, "split_k": {"SPLIT_K": 2, "TMA": 0},
         "tma": {"SPLIT_K": 1, "TMA": 1, "LARGE_M_MIN": 16, "LARGE_M_BLOCK_M": 32}}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("activation, residual", [("sigmoid", False), ("silu", True)])
def test_the_gate_multiplies_after_the_activation(path: str, activation: str, residual: bool) -> None:
    cfg = dict(KERNEL.TUNABLES, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, SMALL_M_MAX=0, MID_M_MAX=0, **PATHS[path])
    generator = torch.Generator().manual_seed(6)
    m, n, k = 37, 40, 52
    x, w = torch.randn(m, k, generator=generator), torch.randn(n, k, generator=generator) / k ** 0.5
    bias, gate = torch.randn(n, generator=generator), torch.randn(m, n, generator=generator)
    res = torch.randn(m, n, generator=generator) if residual else None
    got = KERNEL.launch_gemm_bf16_linear_epilogue(x, w, bias, res, activation, cfg, gate=gate)
    want = REFERENCE.Model(activation, True, residual, True)(x, w, bias, res, gate)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    z = x.double() @ w.double().T + bias.double()
    by_hand = (torch.sigmoid(z) if activation == "sigmoid" else z * torch.sigmoid(z)) * gate.double()
    torch.testing.assert_close(got.double(), by_hand + (res.double() if residual else 0), rtol=1e-4, atol=1e-4)
