"""expected: fallback
Launches a token Triton kernel, then computes RMSNorm with PyTorch ops inside a profiler range named after that
kernel, hoping the GPU attribution counts the range (a user annotation on the GPU timeline) as the candidate's
own time. Annotations are not device work: the aten kernels inside stay foreign and the op is a fallback.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _touch_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(y_ptr.dtype.element_ty), mask=offs < n)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(1, dtype=x.dtype, device=x.device)
        _touch_kernel[(1,)](scratch, 1, BLOCK=16)
        with torch.profiler.record_function("_touch_kernel"):
            ct = torch.promote_types(x.dtype, torch.float32)
            xf = x.to(ct)
            rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
            return (xf * rstd * weight.to(ct)).to(x.dtype)
