"""fp32 (or bf16) values cast down to fp8 e4m3fn or e5m2 codes by Triton's `.to`, for the interpreter test."""

import torch
import triton
import triton.language as tl


@triton.jit
def _to_fp8(x_ptr, y_ptr, n, BLOCK: tl.constexpr, E5M2: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if E5M2:
        tl.store(y_ptr + offs, x.to(tl.float8e5), mask=offs < n)
    else:
        tl.store(y_ptr + offs, x.to(tl.float8e4nv), mask=offs < n)


def to_fp8(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    y = torch.empty(x.shape, dtype=dtype)
    _to_fp8[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()), E5M2=dtype == torch.float8_e5m2)
    return y
