"""expected: fallback
The RMSNorm computed with PyTorch in a pre-run hook of the candidate's own kernel (`kernel.add_pre_run_hook`), and
the kernel itself only copies the hook's result into the output. Triton calls the hook inside the launch, where
the audit did not record the aten ops (it paused for the interpreter's own tensor handling), so the PyTorch work
was invisible and the candidate scored real. Caught: the audit records what a launch runs (hooks, a callable grid,
the kernel body), all but our own corrections to the interpreter's builder.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, w_ptr, n, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _rms_norm_into(src, dst, weight, n, eps, BLOCK, **launch_options):
    """Writes the RMSNorm of `dst`'s input (staged in `src`) into `src`, which the kernel then copies out."""
    xf = src.float()
    src.copy_((xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps) * weight.float()).to(src.dtype))


_copy_kernel.add_pre_run_hook(_rms_norm_into)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        staged = x.clone()
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](staged, y, weight, n, self.eps, BLOCK=1024)
        return y
