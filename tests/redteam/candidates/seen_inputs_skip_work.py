"""expected: gpu-only tampered
Does less work on inputs it has seen before while keeping every launch and every output identical: one output
buffer per input tensor, filled by the first (full) call; later calls on the same tensors launch the same kernel
with the same arguments, but a flag it sets in device memory (an aten fill, not a launch argument) makes all
programs but one in sixteen return at once, and the buffer still holds the right rows. Outputs and launches
match; only the time gives it away: the timed calls (on the timing sets) run far faster than the profiled calls on
fresh copies of the same inputs (`tampered`). On the CPU there is no device time to compare, so this case is GPU-only.
"""

import weakref

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, flag_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if tl.load(flag_ptr) != 0:
        if row % 16 != 0:
            return
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.outputs: dict[int, tuple[weakref.ref, torch.Tensor]] = {}  # id(x) -> (x, its output buffer)
        self.flag: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        if self.flag is None or self.flag.device != x.device:
            self.flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        entry = self.outputs.get(id(x))
        y = entry[1] if entry is not None and entry[0]() is x else None
        self.flag.fill_(0 if y is None else 1)
        if y is None:
            y = torch.empty_like(x2)
            self.outputs[id(x)] = (weakref.ref(x), y)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, self.flag, x2.stride(0), y.stride(0), n_cols, self.eps,
                                         BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
