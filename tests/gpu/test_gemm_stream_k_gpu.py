"""On a CUDA GPU: the bf16 GEMM's stream-K path (STREAM_K) — programs that wait on each other's flags — at the
decode shapes it is for, against float64 products, and the same bits on every call."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

pytestmark = pytest.mark.gpu
KERNEL = import_file(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py", "gemm_stream_k_gpu")


@pytest.mark.parametrize("m, n, k, activation", [(64, 6144, 4096, "none"), (256, 7168, 8192, "silu"),
                                                 (1, 4096, 1024, "none"), (100, 1024, 14336, "gelu_tanh")])
def test_stream_k_matches_float64_and_repeats_bit_for_bit(m: int, n: int, k: int, activation: str) -> None:
    generator = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=generator)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=generator) / k ** 0.5
    gate = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=generator)
    cfg = dict(KERNEL.TUNABLES, STREAM_K=1)
    outs = [KERNEL.launch_gemm_bf16_linear_epilogue(x, w, None, None, activation, cfg, gate=gate) for _ in range(3)]
    z = x.double() @ w.double().T
    z = z * torch.sigmoid(z) if activation == "silu" else \
        torch.nn.functional.gelu(z, approximate="tanh") if activation == "gelu_tanh" else z
    torch.testing.assert_close(outs[0].double(), z * gate.double(), rtol=2e-2, atol=2e-2)
    assert all(torch.equal(outs[0], out) for out in outs[1:])
