"""The depthwise causal conv1d kernel with its windows formed in registers (REGISTER_SHIFT 1) against the
problem's reference: tails of channels and steps, a sequence shorter than a chunk, widths up to a chunk's shift
(CPU interpreter)."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO
from tests.knowledge.hopper_compile import run_compile_script


@pytest.mark.parametrize("batch, dim, seqlen, width, dtype", [
    (2, 37, 50, 4, torch.float32),  # channel and step tails
    (1, 6, 129, 4, torch.float16),  # one step past a power of two; chunks of 8
    (1, 5, 3, 4, torch.float32),  # shorter than the window
    (1, 3, 70, 5, torch.float32),  # a shift of 4: the whole previous chunk of 4
    (1, 3, 70, 2, torch.float16),
])
def test_register_shift_matches_the_reference(monkeypatch: pytest.MonkeyPatch, batch: int, dim: int, seqlen: int,
                                              width: int, dtype: torch.dtype) -> None:
    kernel = import_file(REPO / "kb/family/linear_attention/linear_attn_causal_conv1d.py", "conv1d_kernel")
    reference = import_file(REPO / "problems/linear_attn_causal_conv1d/reference.py", "conv1d_reference")
    monkeypatch.setitem(kernel.TUNABLES, "REGISTER_SHIFT", 1)
    monkeypatch.setitem(kernel.TUNABLES, "BLOCK_T", 64)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, dim, seqlen, generator=gen).to(dtype)
    weight = (torch.rand(dim, width, generator=gen) - 0.5).to(dtype)
    bias = (torch.rand(dim, generator=gen) - 0.5).to(dtype)
    assert kernel._chunk(x, width, 64) >= width - 1
    got = kernel.Model(dim, width)(x, weight, bias)
    want = reference.Model(dim, width)(x, weight, bias)
    torch.testing.assert_close(got.float(), want.float(), atol=2e-3 if dtype == torch.float16 else 1e-5, rtol=1e-3)


# Both launch paths compiled for sm_90 with Triton's NVIDIA backend, which needs no GPU, in a process without
# the interpreter (bench/evaluator/target_compile.py): prints each path's kernel and its PTX line count.
_HOPPER_COMPILE = """
import sys
from pathlib import Path
import torch
from aka_tui.bench.evaluator.target_compile import install_compile_only
from aka_tui.bench.problem.module_loading import import_file
compiled = install_compile_only(90)
kernel = import_file(Path(sys.argv[1]), "conv1d_kernel_compiled")
x = torch.randn(2, 64, 1024, dtype=torch.bfloat16)
weight, bias = torch.randn(64, 4, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16)
for shift in (0, 1):
    kernel.TUNABLES["REGISTER_SHIFT"] = shift
    compiled.clear()
    kernel.Model(64, 4)(x, weight, bias)
    print(shift, *dict(compiled).items())
"""


def test_both_paths_compile_for_hopper() -> None:
    run = run_compile_script(_HOPPER_COMPILE, str(REPO / "kb/family/linear_attention/linear_attn_causal_conv1d.py"))
    lines = {line.split()[0]: line for line in run.stdout.splitlines() if line}
    assert "_linear_attn_causal_conv1d_kernel" in lines["0"], run.stdout
    assert "_conv1d_register_shift_kernel" in lines["1"], run.stdout
