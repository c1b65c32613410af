"""Versioned result records of an evaluation (JSON in, JSON out)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from aka_tui.bench.measure.verdicts import PASSED, STATUSES, VERDICTS  # noqa: F401  (the one vocabulary)

SCHEMA_VERSION = 1

# Where a shape's result keeps each baseline's timing (job.BASELINE_KINDS), when it was timed beside the candidate
BASELINE_TIMING_FIELDS = {"eager": "eager_timing", "compile": "compile_timing",
                          "compile-max-autotune": "compile_max_timing"}


@dataclass(frozen=True)
class StageError:
    """Why a stage failed; stored as data, never as an exception object."""

    stage: str  # compile | inputs | reference | correctness | audit | timing | worker
    kind: str  # one of STATUSES
    message: str
    traceback_text: str = ""


@dataclass(frozen=True)
class TimingStats:
    """Per-call device time of a callable over rotating input sets (milliseconds).

    On CUDA `median_ms`, `min_ms`, `p20_ms`, `p80_ms` and `reps` are the GPU-saturated pass when `saturated`
    (device time only, see timing.py), else the host-bound pass. The `host_bound_*` fields always describe the
    first (host-bound) pass, whose intervals may include host launch latency; `wall_ms_per_call` and
    `flush_ms` belong to it too and feed the escaped-work check. Results written before the saturated pass (2026-11-30)
    lack these fields: there `median_ms` & co. are the host-bound pass and `saturated` loads as False.
    """

    median_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    reps: int
    input_sets: int
    timer: str  # "cuda_events" | "perf_counter"
    l2_flush_bytes: int
    wall_ms_per_call: float | None = None  # synchronised wall time per host-bound iteration (flush included)
    flush_ms: float | None = None  # device time of one L2 flush
    saturated: bool = False  # the reported figures come from the GPU-saturated pass
    host_bound_median_ms: float | None = None  # first pass: flush, events and call enqueued with no GPU backlog
    host_bound_min_ms: float | None = None
    host_bound_p20_ms: float | None = None
    host_bound_p80_ms: float | None = None
    host_bound_reps: int | None = None
    host_enqueue_ms: float | None = None  # host time to enqueue one first-pass iteration (sizes the sleep)
    host_call_ms: float | None = None  # first pass: median host time inside one call alone (no harness work)
    sleep_ms: float | None = None  # measured GPU sleep before the saturated pass
    saturation_note: str = ""  # why the reported figures are not from a saturated pass (empty when they are)

    @staticmethod
    def from_json(data: dict[str, Any]) -> TimingStats:
        """Accepts old records (no saturated-pass fields); unknown keys from newer records are ignored."""
        known = {f.name for f in fields(TimingStats)}
        return TimingStats(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class AuditReport:
    """Fallback attribution (v1: dispatch-mode audit of aten ops + Triton launch hook)."""

    real: bool
    method: str
    own_kernels: dict[str, int] = field(default_factory=dict)
    foreign_kernels: dict[str, int] = field(default_factory=dict)
    compute_ops: dict[str, int] = field(default_factory=dict)
    allowed_ops: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    own_share: float | None = None  # device-time share of the candidate's kernels (CUDA only)
    own_device_us: dict[str, float] = field(default_factory=dict)
    foreign_device_us: dict[str, float] = field(default_factory=dict)
    # Per kernel launched in the audited forward (GPU only): n_regs, n_spills, shared_bytes, num_warps,
    # num_stages and theoretical occupancy (aka_tui/bench/measure/kernel_resources.py); empty under the interpreter.
    kernel_resources: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ShapeResult:
    """Everything measured for one shape of one candidate."""

    shape_id: str
    status: str
    seeds: list[int]
    error: StageError | None = None
    reference_precision: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    timing: TimingStats | None = None
    audit: AuditReport | None = None
    roofline: dict[str, Any] | None = None
    eager_timing: TimingStats | None = None
    compile_timing: TimingStats | None = None
    compile_max_timing: TimingStats | None = None  # torch.compile(mode="max-autotune"); absent from older results
    fuzz: bool = False  # a fuzzed shape: correctness only, weight 0, must pass for the op to count
    # What tied the timed calls to the checked ones (timed_calls, sampled_calls, launches_compared,
    # timed_over_profiled) and whether the parent's own reference agreed (parent_check)
    verification: dict[str, Any] = field(default_factory=dict)
    # The naive check's verdict for this shape (`aka bench run --naive`: one input, allclose 1e-2, nothing else);
    # None when it was not run
    naive_passed: bool | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def time_ms(self) -> float | None:
        return self.timing.median_ms if self.timing else None

    @staticmethod
    def from_json(data: dict[str, Any]) -> ShapeResult:
        def timing(key: str) -> TimingStats | None:
            return TimingStats.from_json(data[key]) if data.get(key) else None

        return ShapeResult(
            shape_id=data["shape_id"], status=data["status"], seeds=list(data.get("seeds", [])),
            error=StageError(**data["error"]) if data.get("error") else None,
            reference_precision=data.get("reference_precision"),
            max_abs_error=data.get("max_abs_error"), max_rel_error=data.get("max_rel_error"),
            timing=timing("timing"), audit=AuditReport(**data["audit"]) if data.get("audit") else None,
            roofline=data.get("roofline"), eager_timing=timing("eager_timing"), compile_timing=timing("compile_timing"),
            compile_max_timing=timing("compile_max_timing"), fuzz=bool(data.get("fuzz", False)),
            verification=dict(data.get("verification") or {}), naive_passed=data.get("naive_passed"),
        )


@dataclass
class CandidateResult:
    """One candidate evaluated on one problem."""

    problem: str
    candidate: str  # label: file path, or a baseline kind ("eager", "compile", "compile-max-autotune")
    compiled: bool
    shapes: list[ShapeResult]
    provenance: dict[str, Any] = field(default_factory=dict)
    compile_error: StageError | None = None
    static_findings: list[str] = field(default_factory=list)
    suspicious: list[str] = field(default_factory=list)  # findings that read the harness: S = 0 until accepted
    acceptances: list[dict[str, Any]] = field(default_factory=list)  # a person's acceptances (measure/acceptance.py)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> CandidateResult:
        return CandidateResult(
            problem=data["problem"], candidate=data["candidate"], compiled=data["compiled"],
            shapes=[ShapeResult.from_json(s) for s in data["shapes"]], provenance=data.get("provenance", {}),
            compile_error=StageError(**data["compile_error"]) if data.get("compile_error") else None,
            static_findings=list(data.get("static_findings", [])),
            suspicious=list(data.get("suspicious", [])), acceptances=list(data.get("acceptances", [])),
        )
