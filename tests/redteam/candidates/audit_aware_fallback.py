"""expected: gpu-only tampered
Audit-aware: launches its Triton kernel only while the evaluator audits (an aten dispatch mode is active, or the
profiler is on) and computes with PyTorch otherwise, so the audit sees a real kernel while every other call is a
fallback. The state is read through getattr with assembled names, which the static scan does not see. Caught at
run time: the audited and profiled calls launch other work than the checked calls on the same inputs. GPU-only
since every call runs under an audit on the CPU (`audit_aware_same_launches`): there it launches its kernel in
every call, an honest kernel.
"""

import torch
import torch.utils._python_dispatch as dispatch
import triton
import triton.language as tl
from torch import nn

_MODE = getattr(dispatch, "_get_current_" + "dispatch_mode")
_PROFILING = getattr(torch._C._autograd, "_profiler_" + "enabled")


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
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

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if _MODE() is None and not _PROFILING():
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * weight.float()).to(x.dtype)
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, self.eps,
                                         BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
