"""expected: tampered
A PyTorch fallback hidden in a child process: forward forks (`os.fork`), the child computes the RMSNorm with
PyTorch into a tensor in shared memory and exits, and the parent, after waiting for it, copies the result into
the output with its own Triton kernel. The dispatch audit and the thread census watch the worker's process only,
so the copy kernel was all they saw (scored real); the static scan had no word for `os.fork`. Caught: a fork (or a
process left running) during a call is tampering, as a thread is.
"""

import os

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        shared = torch.empty_like(x).share_memory_()
        pid = os.fork()
        if pid == 0:  # the child: PyTorch, unseen by the worker's audit
            try:
                xf = x.float()
                rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
                shared.copy_((xf * rstd * weight.float()).to(x.dtype))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](shared, y, n, BLOCK=1024)
        return y
