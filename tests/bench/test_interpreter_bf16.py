"""The CPU interpreter's bf16 dot, once a kernel module is imported through the evaluator's loader: exact
products of the bf16 values accumulated in fp32, as the GPU's MMA gives (unpatched, Triton 3.7.1 multiplies the
bit patterns: errors of about 1e9)."""

from __future__ import annotations

from pathlib import Path

import torch

from aka_tui.bench.problem.interpreter_bf16 import install_if_interpreting
from aka_tui.bench.problem.module_loading import import_file

KERNEL = Path(__file__).parent / "kernels" / "bf16_dot.py"


def test_a_bf16_dot_in_the_interpreter_matches_the_fp32_product_of_its_values() -> None:
    module = import_file(KERNEL, "bf16_dot")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(16, 32, generator=gen).to(torch.bfloat16)
    b = torch.randn(32, 16, generator=gen).to(torch.bfloat16)
    got = module.bf16_dot(a, b)
    want = a.float() @ b.float()
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()


def test_installing_twice_keeps_one_widening_layer() -> None:
    import_file(KERNEL, "bf16_dot")
    from triton.runtime import interpreter

    first = interpreter.InterpreterBuilder.create_dot
    assert install_if_interpreting()
    assert interpreter.InterpreterBuilder.create_dot is first
