"""The CPU interpreter's bf16 dot, fp8 casts and atomics, once a kernel module is imported through the evaluator's loader:
exact products of the bf16 values accumulated in fp32, as the GPU's MMA gives (unpatched, Triton 3.7.1
multiplies the bit patterns: errors of about 1e9); fp8 codes rounded to nearest even with finite values
saturated, as the GPU's conversion gives (unpatched: a rounding carry is lost, 7.9 becomes 4.0)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_tui.bench.problem.interpreter_bf16 import install_if_interpreting
from aka_tui.bench.problem.module_loading import import_file

KERNEL = Path(__file__).parent / "kernels" / "bf16_dot.py"
FP8_KERNEL = Path(__file__).parent / "kernels" / "fp8_cast.py"


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


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("source", [torch.float32, torch.bfloat16])
def test_an_fp8_cast_in_the_interpreter_rounds_to_nearest_even_and_saturates(dtype: torch.dtype,
                                                                           source: torch.dtype) -> None:
    module = import_file(FP8_KERNEL, "fp8_cast")
    largest = torch.finfo(dtype).max
    x = torch.tensor([7.9, 7.5, 8.5, 9.0, 0.3, -26.0, -24.9, 15.5, 0.0, -0.0, 1e-9, 0.0019, 2.0 ** -8,
                      largest, largest * 1.03, 1e30, -1e30, float("inf"), float("-inf"), float("nan")]).to(source)
    got = module.to_fp8(x, dtype)
    want = x.double().clamp(-largest, largest).to(dtype)  # the GPU's satfinite conversion; NaN stays NaN
    nan = x.isnan()
    assert torch.equal(got.view(torch.uint8)[~nan], want.view(torch.uint8)[~nan]), (got.float(), want.float())
    assert got.float()[nan].isnan().all()


def test_atomics_in_the_interpreter_read_a_broadcast_value_once_per_pointer() -> None:
    """Unpatched, the interpreter reads a stride-0 value as contiguous memory: the counts are garbage."""
    module = import_file(Path(__file__).parent / "kernels" / "broadcast_atomics.py", "broadcast_atomics")
    index = torch.tensor([1, 1, 2, 1, 0, 2, 5, 7, 7, 3, 3, 3, 3], dtype=torch.int64)
    assert torch.equal(module.counts(index, 8).long(), torch.bincount(index, minlength=8))
    slots = torch.tensor([0, 3, 0, 0, 9, 0, 1, 0], dtype=torch.int32)
    assert torch.equal(module.claim_zeros(slots), torch.where(slots == 0, 7, slots))
