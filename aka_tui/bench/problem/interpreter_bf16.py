"""Correct bf16 dots in Triton's CPU interpreter.

The interpreter stores bf16 values as their uint16 bit patterns and `tl.dot` multiplies those integers (Triton
3.7.1: errors of about 1e9 on unit-scale attention inputs), so a correct bf16 kernel fails every output check on
the CPU. Widening a bf16 operand to fp32 (the bit pattern shifted into the high half) is exact, and an fp32 dot
of exact products with fp32 accumulation is what the GPU's bf16 MMA computes. Other bf16 arithmetic is left as
the interpreter has it: kernels widen bf16 with `.to(tl.float32)`, which the interpreter converts correctly.

Its casts down to fp8 are wrong too (3.7.1): a rounding carry out of the mantissa is lost (7.9 became 4.0
instead of 8.0 in e4m3fn), halves round up instead of to even, and finite values past the largest are not
saturated. Those casts are redone with torch's conversion (round to nearest even) after saturating finite
values to the format's largest, as the GPU's `cvt.rn.satfinite` does; NaN stays NaN.

Its atomics read their operands' memory as if contiguous (3.7.1): a value broadcast to the pointers' shape (a
stride-0 NumPy view, as inductor's `tl.atomic_add(ptrs, tl.full([1], 1, tl.int32), mask)` of a count makes it)
is read past its one element, and the counts are garbage. The operands are made contiguous first.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_INSTALLED = "_aka_bf16_dot_widened"


def install_if_interpreting() -> bool:
    """Widen bf16 dot operands in the interpreter of this process when TRITON_INTERPRET is on and the interpreter
    is loaded; idempotent. Returns whether the fix is in place."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "triton.runtime.interpreter" not in sys.modules:
        return False
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_dot, _INSTALLED, False):
        return True
    create_dot = builder.create_dot

    def widened(handle: Any) -> Any:
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        bits = np.ascontiguousarray(handle.data).astype(np.uint32) << 16
        return interpreter.TensorHandle(bits.view(np.float32), tl.float32)

    def create_dot_widening_bf16(self: Any, a: Any, b: Any, d: Any, input_precision: Any,
                                 max_num_imprecise_acc: Any) -> Any:
        return create_dot(self, widened(a), widened(b), d, input_precision, max_num_imprecise_acc)

    setattr(create_dot_widening_bf16, _INSTALLED, True)
    builder.create_dot = create_dot_widening_bf16
    _install_fp8_downcast(builder, interpreter)
    _install_contiguous_atomics(builder, interpreter)
    return True


def _install_contiguous_atomics(builder: Any, interpreter: Any) -> None:
    """Atomic read-modify-writes and compare-and-swaps on contiguous copies of their operands."""
    import numpy as np

    def contiguous(handle: Any) -> Any:
        return interpreter.TensorHandle(np.ascontiguousarray(handle.data), handle.dtype)

    create_atomic_rmw = builder.create_atomic_rmw
    create_atomic_cas = builder.create_atomic_cas

    def create_atomic_rmw_contiguous(self: Any, op: Any, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
        return create_atomic_rmw(self, op, contiguous(ptr), contiguous(val), contiguous(mask), sem, scope)

    def create_atomic_cas_contiguous(self: Any, ptr: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
        return create_atomic_cas(self, contiguous(ptr), contiguous(cmp), contiguous(val), sem, scope)

    builder.create_atomic_rmw = create_atomic_rmw_contiguous
    builder.create_atomic_cas = create_atomic_cas_contiguous


def _install_fp8_downcast(builder: Any, interpreter: Any) -> None:
    """Round-to-nearest-even fp8 downcasts (saturating finite values) in the interpreter's builder."""
    import numpy as np
    import torch
    import triton.language as tl

    formats = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2, "fp8e4b8": torch.float8_e4m3fnuz,
               "fp8e5b16": torch.float8_e5m2fnuz}
    create_fp_to_fp = builder.create_fp_to_fp
    rtz = interpreter._ir.ROUNDING_MODE.RTZ

    def create_fp_to_fp_rounding_fp8(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        target = formats.get(dst_type.scalar.name)
        source = src.dtype.scalar
        if target is None or rounding_mode == rtz or source.primitive_bitwidth <= 8:
            return create_fp_to_fp(self, src, dst_type, rounding_mode)
        data = np.ascontiguousarray(src.data)
        if source == tl.bfloat16:  # stored as bit patterns: widen (exact) first
            data = (data.astype(np.uint32) << 16).view(np.float32)
        largest = torch.finfo(target).max
        values = torch.from_numpy(np.asarray(data, dtype=np.float64)).clamp(-largest, largest)
        codes = values.to(target).view(torch.uint8).numpy().reshape(data.shape)
        return interpreter.TensorHandle(codes, dst_type.scalar)

    builder.create_fp_to_fp = create_fp_to_fp_rounding_fp8
