"""Lazy access to the empty-kernel launch measurement (its Triton kernel is defined only when needed)."""

from __future__ import annotations

from aka_tui.bench.timing import Timers


def measure(timers: Timers, l2_bytes: int) -> float:
    """Median empty-launch time in ms under the candidate timing protocol (CUDA only)."""
    from aka_tui.bench.empty_kernel import measure_empty_launch_ms

    return measure_empty_launch_ms(timers, l2_bytes)
