"""The bf16 GEMM kernel's TMA path (operands through host-built tensor descriptors) gives the reference's output on
the CPU interpreter, ragged edges and every epilogue included; operands a descriptor cannot address take the
pointer path."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO


@pytest.mark.parametrize("activation, bias, residual", [("none", False, True), ("gelu_tanh", True, False),
                                                        ("silu", True, True)])
def test_tma_path_matches_the_reference(activation: str, bias: bool, residual: bool) -> None:
    kernel = import_file(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py", f"gemm_tma_{activation}")
    cfg = dict(kernel.TUNABLES, TMA=1, LARGE_M_MIN=16, LARGE_M_BLOCK_M=32, BLOCK_N=32, BLOCK_K=16,
               SMALL_M_MAX=0, MID_M_MAX=0)
    torch.manual_seed(0)
    m, n, k = 70, 40, 52  # none a multiple of its tile: the descriptor's zero fill and the store mask at work
    x, w = torch.randn(m, k), torch.randn(n, k) / k ** 0.5
    b = torch.randn(n) if bias else None
    r = torch.randn(m, n) if residual else None
    got = kernel.launch_gemm_bf16_linear_epilogue(x, w, b, r, activation, cfg)
    z = x.double() @ w.double().T + (b.double() if bias else 0)
    z = {"none": z, "silu": z * torch.sigmoid(z),
         "gelu_tanh": torch.nn.functional.gelu(z, approximate="tanh")}[activation]
    z = z + (r.double() if residual else 0)
    torch.testing.assert_close(got.double(), z, rtol=1e-4, atol=1e-4)


def test_misaligned_operands_take_the_pointer_path() -> None:
    """A row stride that is not a multiple of 16 bytes cannot be a TMA descriptor: the pointer kernel runs."""
    kernel = import_file(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py", "gemm_tma_misaligned")
    cfg = dict(kernel.TUNABLES, TMA=1, LARGE_M_MIN=16, LARGE_M_BLOCK_M=32, BLOCK_N=32, BLOCK_K=16,
               SMALL_M_MAX=0, MID_M_MAX=0)
    x, w = torch.randn(40, 27), torch.randn(24, 27)  # 27 fp32 = 108-byte rows
    assert not kernel._tma_ok(x, w) and kernel._tma_ok(torch.randn(40, 28), torch.randn(24, 28))
    got = kernel.launch_gemm_bf16_linear_epilogue(x, w, None, None, "none", cfg)
    torch.testing.assert_close(got.double(), x.double() @ w.double().T, rtol=1e-4, atol=1e-4)
