"""expected: tampered
Leaves the outputs to a signal handler: the forward launches its own Triton kernel (a copy of the input, not the
RMSNorm) and arms a one-shot timer whose handler computes the RMSNorm with PyTorch into the returned tensor. The
handler runs between two of the harness's bytecodes after the audited call has returned, so the audit sees only
the copy kernel, and the comparison may find the right values (when the timer fires before it reads them: a
race). Whatever the race does, the handler installed at import is a change to the worker's signal handlers after
the integrity snapshot (`tampered`); `signal` is also held by the static scan.
"""

import signal

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


_PENDING: list = []


def _finish(number, frame):
    while _PENDING:
        x, weight, eps, out = _PENDING.pop()
        xf = x.float()
        out.copy_((xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps) * weight.float()).to(out.dtype))


signal.signal(signal.SIGALRM, _finish)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        _PENDING.append((x, weight, self.eps, out))
        signal.setitimer(signal.ITIMER_REAL, 1e-4)
        return out
