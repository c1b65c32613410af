"""expected: tampered
forward allocates the output, starts a Python thread that runs the honest Triton RMSNorm into it, and returns at
once; the previous call's thread is joined lazily at the start of the next call (and at exit), so the timed
call costs only a thread start. The thread writes every element deterministically, so the output is exactly
correct once it is joined; only detecting a thread still alive after forward catches it.
"""

import atexit
import threading

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


_PENDING: list = []
_LOCK = threading.Lock()


def _join_pending() -> None:
    with _LOCK:
        threads = list(_PENDING)
        _PENDING.clear()
    for t in threads:
        t.join()


atexit.register(_join_pending)


def _work(x2, weight, y, eps, device):
    if device.type == "cuda":
        torch.cuda.set_device(device)
    n_cols = x2.shape[1]
    _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, eps,
                                     BLOCK=triton.next_power_of_2(n_cols))


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        _join_pending()  # lazy join of the previous call's work
        x2 = x.view(-1, x.shape[-1])
        y = torch.empty_like(x2)
        # keep references to the inputs alive inside the thread: the result is deterministic once joined
        t = threading.Thread(target=_work, args=(x2, weight, y, self.eps, x.device), daemon=True)
        with _LOCK:
            _PENDING.append(t)
        t.start()
        return y.view(x.shape)  # returned before the kernel has run
