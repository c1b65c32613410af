"""The loop's wall-time budget: what each kind of evaluation has cost so far, and what the next step will.

Prediction rule. Every evaluation the loop runs is timed by kind: the baseline, full evaluations (a
candidate's hardened evaluation, or a person's edit), quick ones (a screening or one re-measurement
evaluation: the weighted shapes, one case, no fuzzing), best-of-k screening batches and the checks that a
candidate compiles for a GPU architecture (`compile_for`). The rest of an iteration (retrieval, the proposer,
recording) is its overhead. The next iteration is predicted as the
worst path it can take, each part at the longest duration measured so far:

    overhead + [screening] + full + [2 × remeasure_rounds × quick] + [compile check]

with the screening only when there is an incumbent and screening is on, and the re-measurement only when
there is an incumbent and rounds are configured (a win or a close call is re-measured), and the compile check
only when one is configured (its estimate is 0 until one ran). A full estimate
falls back to the baseline until a candidate's full evaluation was timed, a quick one to the full estimate
(a quick evaluation runs a subset of a full one), a batch to the quick estimate.

Why the maximum and the worst path: an iteration that overruns is killed by whatever enforces the budget
outside (on the H200, 16 of 22 sessions of a whole-suite run were killed mid-iteration 2 and lost it),
while stopping one iteration early loses at most that iteration; and iteration times vary far more than a
median can follow (20–30 s, then 74–87 s when a close call was re-measured, 2026-11-30).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

KINDS = ("baseline", "full", "quick", "batch", "target-compile")


@dataclass
class WallBudget:
    """Deadline and timing record of one loop run (`wall_time_s` None or 0: no deadline)."""

    wall_time_s: float | None
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    durations_s: dict[str, list[float]] = field(init=False)
    overheads_s: list[float] = field(default_factory=list)
    _evaluating_s: float = 0.0  # total time spent in timed evaluations
    _iteration_mark: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        self.started = self.clock()
        self.durations_s = {kind: [] for kind in KINDS}

    @property
    def limited(self) -> bool:
        return bool(self.wall_time_s)

    def left_s(self) -> float:
        """Seconds left before the deadline (infinite without one; negative once overrun)."""
        if not self.wall_time_s:
            return float("inf")
        return self.wall_time_s - (self.clock() - self.started)

    @contextmanager
    def timed(self, kind: str) -> Iterator[None]:
        """Time the evaluation(s) in the block as one sample of `kind`."""
        start = self.clock()
        try:
            yield
        finally:
            elapsed = self.clock() - start
            self.durations_s[kind].append(elapsed)
            self._evaluating_s += elapsed

    def iteration_started(self) -> None:
        self._iteration_mark = (self.clock(), self._evaluating_s)

    def iteration_finished(self) -> None:
        """Record the iteration's overhead: its wall time less the evaluations timed within it."""
        if self._iteration_mark is None:
            return
        start, evaluating_before = self._iteration_mark
        self.overheads_s.append(max(0.0, (self.clock() - start) - (self._evaluating_s - evaluating_before)))
        self._iteration_mark = None

    def estimate_s(self, kind: str) -> float | None:
        """The longest evaluation of `kind` so far, with the fallbacks of the module docstring."""
        if self.durations_s[kind]:
            return max(self.durations_s[kind])
        fallback = {"full": "baseline", "quick": "full", "batch": "quick"}.get(kind)
        return self.estimate_s(fallback) if fallback else None

    def predict_iteration_s(self, has_incumbent: bool, screen: bool, parallel_screen: bool,
                            remeasure_rounds: int, target_compile: bool = False) -> float | None:
        """The next iteration's worst-path duration, or None before any evaluation was timed."""
        full = self.estimate_s("full")
        if full is None:
            return None
        predicted = max(self.overheads_s, default=0.0) + full
        if has_incumbent and screen:
            predicted += self.estimate_s("batch" if parallel_screen else "quick") or 0.0
        if has_incumbent and remeasure_rounds > 0:
            predicted += 2 * remeasure_rounds * (self.estimate_s("quick") or 0.0)
        if target_compile:
            predicted += self.estimate_s("target-compile") or 0.0
        return predicted

    def round_fits(self) -> tuple[bool, float, float]:
        """Whether one more re-measurement round (two quick evaluations) fits: (fits, predicted_s, left_s)."""
        predicted = 2 * (self.estimate_s("quick") or 0.0)
        left = self.left_s()
        return predicted <= left, predicted, left
