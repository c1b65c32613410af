"""An empty Triton kernel (its event-timed launch is the floor any tiny kernel pays under our timer), and the
marker kernel that separates profiled calls on the device timeline. CUDA only."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from aka_tui.bench.measure.timing import Timers, time_cuda


@triton.jit
def _empty_kernel(x_ptr):  # type: ignore[no-untyped-def]
    pass


@triton.jit
def _aka_call_marker(x_ptr):  # type: ignore[no-untyped-def]
    tl.store(x_ptr, 1)


@triton.jit
def _aka_clock_warmup(x_ptr, n):  # type: ignore[no-untyped-def]
    acc = tl.load(x_ptr)
    for _ in range(n):
        acc = acc * 0.999999 + 1e-7
    tl.store(x_ptr, acc)


CALL_MARKER = "_aka_call_marker"  # the device-kernel name that opens each profiled call (attribution.split_calls)
CLOCK_WARMUP = "_aka_clock_warmup"  # ~1 ms of dependent arithmetic before each profiled call (dropped from it)
WARMUP_STEPS = 500_000


def launch_call_marker(x: torch.Tensor) -> None:
    """Keep the GPU busy for about a millisecond (its clocks up after the profiler's start-up), then one marker
    kernel on the current stream: where a profiled call starts, and which stream is timed."""
    _aka_clock_warmup[(1,)](x, WARMUP_STEPS)
    _aka_call_marker[(1,)](x)


def measure_empty_launch_ms(timers: Timers, l2_bytes: int) -> float:
    """Median time of one empty launch as the host sees it: the host-bound pass of the candidates' protocol
    (L2 flush, events, no GPU backlog), so host launch latency is in it. Candidates are reported from the
    GPU-saturated pass, which leaves that latency out; this floor is what the launch-aware S puts back."""
    x = torch.empty(1, device="cuda")
    stats = time_cuda(lambda _inputs: _empty_kernel[(1,)](x), [{}], timers, l2_bytes, min_reps=50, max_reps=200,
                      saturate=False)
    return stats.median_ms
