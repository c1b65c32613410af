"""One configuration's trial on one shape, the sweep's status vocabulary and the comparison of two trials.

A trial is what the sweep records for one configuration on one shape: its check (the engine's verdict, or
`duplicate` when it launched exactly what an earlier timed configuration launched), its timing and its figures
against the roofline. `better` is the one rule every search and the final recommendation use to call one
trial faster than another: by more than the measured spread of either, and by at least `MIN_GAIN`. Nothing here
imports torch, so the child-process parent and the report read trials without it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from aka_tui.bench.measure.verdicts import PASSED

SWEEP_VERSION = 1  # of the sweep's JSON record (report, op records, trials)
MIN_GAIN = 0.01  # a change must also win by at least 1% of the incumbent's median (events tick at ~0.5 us)
OK_STATUSES = (PASSED, "duplicate")
FAILED_STATUSES = ("wrong_output", "runtime_error", "cuda_error", "crashed", "timeout", "tampered")
_LEGACY_STATUS = {"ok": PASSED, "error": "runtime_error"}  # records written before the engine's vocabulary


@dataclass
class Trial:
    """One configuration on one shape: its check, its time and what that means against the roofline."""

    index: int
    shape_id: str
    config: dict[str, Any]
    changed: dict[str, Any]  # the tunables that differ from the kernel's default TUNABLES
    phase: str  # "search" | "crosscheck"
    status: str  # "passed" | "duplicate" (same launches as `duplicate_of`, not timed again) | FAILED_STATUSES
    error: str | None = None
    median_ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    min_ms: float | None = None
    reps: int | None = None
    saturated: bool | None = None  # time_cuda's GPU-saturated pass reported (None where the timer has none)
    timing_note: str = ""
    duplicate_of: int | None = None
    launch: str | None = None  # hash of the recorded launches (kernel, arguments, grid, launch options)
    kernels: list[str] = field(default_factory=list)
    max_abs_error: float | None = None
    tbps: float | None = None  # bytes read + written / median
    bw_pct: float | None = None  # of the hardware profile's HBM bandwidth
    tflops: float | None = None
    flops_pct: float | None = None  # of the profile's peak on the shape's execution path
    sol_ratio: float | None = None  # T_SOL / T: the S-like figure (the evaluator's S adds its checks)
    seconds: float = 0.0  # wall time of this trial (check, compile and timing)

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES and self.median_ms is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Trial:
        names = {f.name for f in fields(Trial)}
        values = {k: v for k, v in data.items() if k in names}
        values["status"] = _LEGACY_STATUS.get(values.get("status", ""), values.get("status", PASSED))
        return Trial(**values)


TIMING_FIELDS = ("median_ms", "p20_ms", "p80_ms", "min_ms", "reps", "saturated", "timing_note", "tbps", "bw_pct",
                 "tflops", "flops_pct", "sol_ratio")
"""What a duplicate copies from the trial it duplicates (its time and the figures computed from it)."""


def config_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def changes(config: dict[str, Any], default: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if default.get(k, object()) != v}


def better(challenger: Trial, incumbent: Trial) -> bool:
    """Faster by more than the larger p20–p80 band of the two (and by ≥ MIN_GAIN of the incumbent)."""
    if not challenger.ok:
        return False
    if not incumbent.ok:
        return True
    spread = max(incumbent.p80_ms - incumbent.p20_ms, challenger.p80_ms - challenger.p20_ms,  # type: ignore[operator]
                 MIN_GAIN * incumbent.median_ms)  # type: ignore[operator]
    return incumbent.median_ms - challenger.median_ms > spread  # type: ignore[operator]
