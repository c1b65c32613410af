"""The bf16 GEMM's stream-K path (kb/family/gemm/gemm_bf16_linear_epilogue.py, STREAM_K) on the interpreter:
tiles split across programs at any K step, partials added by the tile's owner, against the suite reference."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import PROBLEMS, REPO

KERNEL = import_file(REPO / "kb/family/gemm/gemm_bf16_linear_epilogue.py", "gemm_stream_k_kernel")
REFERENCE = import_file(PROBLEMS / "gemm_bf16_linear_epilogue" / "reference.py", "gemm_stream_k_reference")
TILES = (16, 16, 16, 4, 2)  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages


def _operands(m: int, n: int, k: int, seed: int, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    x, w = torch.randn(m, k, generator=generator), torch.randn(n, k, generator=generator) / k ** 0.5
    bias, gate, res = (torch.randn(n, generator=generator), torch.randn(m, n, generator=generator),
                       torch.randn(m, n, generator=generator))
    return tuple(t.to(dtype) for t in (x, w, bias, gate, res))


# (m, n, k, programs): 9 tiles of 4 K steps over 5 programs (segments end mid-tile and span tiles), one tile over
# more programs than it has steps (idle programs), and one program for everything
@pytest.mark.parametrize("m, n, k, programs", [(37, 40, 52, 5), (33, 50, 100, 7), (16, 16, 16, 4), (40, 48, 80, 1)])
def test_partials_from_every_program_sum_to_the_reference(m: int, n: int, k: int, programs: int) -> None:
    x, w, bias, gate, res = _operands(m, n, k, seed=m + programs)
    outs = []
    for _ in range(2):  # the second launch reuses the flags at the next epoch
        out = x.new_empty((m, n))
        KERNEL._launch_streamk(x, w, bias, res, gate, out, (res.stride(0), gate.stride(0), out.stride(0)),
                               (KERNEL.ACT_IDS["silu"], True, True, True), TILES, 4, programs)
        outs.append(out)
    want = REFERENCE.Model("silu", True, True, True)(x, w, bias, res, gate)
    torch.testing.assert_close(outs[0], want, rtol=1e-4, atol=1e-4)
    assert torch.equal(outs[0], outs[1])  # a fixed order of the partials' sum: the same bits every call


def test_the_launcher_takes_stream_k_only_for_a_grid_that_leaves_sms_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[int] = []
    real = KERNEL._launch_streamk

    def spy(*args, **kwargs):
        launched.append(args[-1])
        return real(*args, **kwargs)

    monkeypatch.setattr(KERNEL, "_launch_streamk", spy)
    monkeypatch.setattr(KERNEL, "_sm_count", lambda device: 6)
    cfg = dict(KERNEL.TUNABLES, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, SMALL_M_MAX=0, MID_M_MAX=0, LARGE_M_MIN=0,
               UNDER_WAVE_BLOCK_M=0, num_warps=4, num_stages=2, STREAM_K=1)
    # 16-bit operands (the stream-K path is not taken for float32's IEEE products)
    x, w, bias, gate, res = _operands(20, 40, 64, seed=3, dtype=torch.float16)  # 2 x 3 = 6 tiles fill 6 SMs once
    KERNEL.launch_gemm_bf16_linear_epilogue(x, w, bias, res, "none", cfg, gate=gate)
    assert launched == []
    x, w, bias, gate, res = _operands(20, 24, 64, seed=4, dtype=torch.float16)  # 2 x 2 = 4 tiles on 6 SMs
    got = KERNEL.launch_gemm_bf16_linear_epilogue(x, w, bias, res, "gelu_tanh", cfg, gate=gate)
    assert launched == [6]
    want = REFERENCE.Model("gelu_tanh", True, True, True)(x, w, bias, res, gate)
    torch.testing.assert_close(got, want, rtol=5e-3, atol=5e-3)
    KERNEL.launch_gemm_bf16_linear_epilogue(x, w, bias, res, "none", dict(cfg, STREAM_K=0), gate=gate)
    assert launched == [6]
