"""An empty Triton kernel: its event-timed launch is the floor any tiny kernel pays under our timer."""

from __future__ import annotations

import torch
import triton

from aka_tui.bench.timing import Timers, time_cuda


@triton.jit
def _empty_kernel(x_ptr):  # type: ignore[no-untyped-def]
    pass


def measure_empty_launch_ms(timers: Timers, l2_bytes: int) -> float:
    """Median time of one empty launch with exactly the protocol candidates are timed with (L2 flush, events)."""
    x = torch.empty(1, device="cuda")
    stats = time_cuda(lambda _inputs: _empty_kernel[(1,)](x), [{}], timers, l2_bytes, min_reps=50, max_reps=200)
    return stats.median_ms
