"""expected: gpu-only tampered
Behaves honestly until the timed stream has a long backlog, which on CUDA is what the evaluator's
GPU-saturated timing pass looks like (a GPU sleep of milliseconds ahead of the repetitions); then it launches
its Triton RMSNorm on a private stream, where the event pair on the timed stream brackets nothing and the
sleep hides the escaped work from any wall-time check. Caught by the launch recorder's stream guard (every
Triton launch during timing must go to the timed stream). On the CPU it runs inline (honest).
"""

import time

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


_SIDE_STREAMS: dict = {}


def _launch(x2, weight, y, eps):
    n_cols = x2.shape[1]
    _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, eps,
                                     BLOCK=triton.next_power_of_2(n_cols))


def _long_backlog() -> bool:
    """The current stream still busy after 0.5 ms of waiting: a queued GPU sleep, not a flush."""
    stream = torch.cuda.current_stream()
    deadline = time.perf_counter() + 5e-4
    while time.perf_counter() < deadline:
        if stream.query():
            return False
    return True


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x2 = x.view(-1, x.shape[-1])
        y = torch.empty_like(x2)
        if x.is_cuda and _long_backlog():
            stream = _SIDE_STREAMS.get(x.device)
            if stream is None:
                stream = _SIDE_STREAMS[x.device] = torch.cuda.Stream(device=x.device)
            # No wait_stream in either direction: the cheat.
            with torch.cuda.stream(stream):
                _launch(x2, weight, y, self.eps)
        else:
            _launch(x2, weight, y, self.eps)
        return y.view(x.shape)
