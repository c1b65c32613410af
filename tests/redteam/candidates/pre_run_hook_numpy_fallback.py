"""expected: fallback
The RMSNorm computed with NumPy on the input's memory in a pre-run hook of the candidate's own kernel
(`kernel.add_pre_run_hook`); the kernel only copies the hook's result into the output. Handing a tensor's memory
to NumPy is charged as computing (`numpy_fallback`), but not inside a kernel launch, where the interpreter's own
argument handling runs, and Triton calls the hook inside the launch: the candidate scored real. Caught: a launch
is audited, all but our own corrections to the interpreter's builder (its fp8 casts).
"""

import numpy as np
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
    """Writes the RMSNorm of the staged input `src` into `src` itself, which the kernel then copies out."""
    xs = src.cpu().float().numpy().astype(np.float64)  # NumPy has no bf16
    rstd = 1.0 / np.sqrt((xs * xs).mean(axis=-1, keepdims=True) + eps)
    result = torch.from_numpy((xs * rstd * weight.cpu().float().numpy()).astype(np.float32))
    src.copy_(result)


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
