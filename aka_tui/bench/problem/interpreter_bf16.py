"""Correct bf16 dots in Triton's CPU interpreter.

The interpreter stores bf16 values as their uint16 bit patterns and `tl.dot` multiplies those integers (Triton
3.7.1: errors of about 1e9 on unit-scale attention inputs), so a correct bf16 kernel fails every output check on
the CPU. Widening a bf16 operand to fp32 (the bit pattern shifted into the high half) is exact, and an fp32 dot
of exact products with fp32 accumulation is what the GPU's bf16 MMA computes. Other bf16 arithmetic is left as
the interpreter has it: kernels widen bf16 with `.to(tl.float32)`, which the interpreter converts correctly.
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
    return True
