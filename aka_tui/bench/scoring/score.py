"""Scores: S per shape (strict, raw, launch-aware), S_op, S_agg, fast_1 and pass rates (design brief §4)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from aka_tui.bench.measure.acceptance import accepted
from aka_tui.bench.measure.results import CandidateResult, ShapeResult, TimingStats
from aka_tui.bench.measure.verdicts import OVER_ROOFLINE, SUSPICIOUS
from aka_tui.bench.problem.model import Problem, RooflineEntry
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import HardwareProfile


@dataclass(frozen=True)
class ShapeScore:
    """Scores of one shape; `s` counts only correct *and* real kernels, `s_raw` ignores fallback."""

    shape_id: str
    weight: float
    passed: bool
    real: bool
    t_sol_ms: float | None
    time_ms: float | None
    s: float
    s_raw: float
    s_launch: float
    bottleneck: str | None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    verdict: str = ""  # the shape's status, or a hold: over_roofline / suspicious (S = 0 until accepted)
    time_e2e_ms: float | None = None  # one call as a serving loop without CUDA graphs sees it (e2e_time_ms)
    s_e2e: float = 0.0  # T_SOL / T_e2e for a passed real kernel, else 0
    s_e2e_raw: float = 0.0  # T_SOL / T_e2e ignoring the fallback verdict
    speedup_vs_compile_max: float | None = None  # over torch.compile(mode="max-autotune"), when it was timed

    @property
    def held_for_audit(self) -> bool:
        """S_raw > 1 beats the speed of light: never accepted silently (S = 0 unless a person accepted it)."""
        return self.s_raw > 1.0


@dataclass(frozen=True)
class OpScore:
    """Weighted scores of one problem."""

    problem: str
    weight: float
    compiled: bool
    correct: bool  # every evaluated shape passed
    real: bool  # every passing shape ran only the candidate's own kernels
    s_op: float
    s_raw_op: float
    s_launch_op: float
    shapes: list[ShapeScore] = field(default_factory=list)
    fuzz_failures: list[str] = field(default_factory=list)
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    holds: list[str] = field(default_factory=list)  # verdicts waiting for a person ("suspicious", "over_roofline:<shape>")
    s_e2e_op: float = 0.0
    s_e2e_raw_op: float = 0.0
    speedup_vs_compile_max: float | None = None

    @property
    def audit_shapes(self) -> list[str]:
        return [s.shape_id for s in self.shapes if s.held_for_audit]


@dataclass(frozen=True)
class AggregateScore:
    """Suite-level numbers."""

    s_agg: float  # Σ w·S_op / Σ w
    s_agg_raw_weight: float  # Σ w·S_op with the suite's weights as given (Atrex-Bench comparable)
    s_raw_agg: float  # like s_agg, ignoring fallback
    s_launch_agg: float
    ops: int
    compiled_rate: float
    correct_rate: float
    correct_and_real_rate: float
    fast_1_vs_eager: float | None
    fast_1_vs_compile: float | None
    s_e2e_agg: float = 0.0  # like s_agg, on end-to-end per-call times
    s_e2e_raw_agg: float = 0.0
    fast_1_vs_compile_max: float | None = None  # None: no op had torch.compile(mode="max-autotune") timed


def e2e_time_ms(timing: TimingStats | None) -> float | None:
    """Per-call time of back-to-back calls with no CUDA graph: max(host time to issue one call, device time).

    On CUDA the host's cost per call is the host-bound pass's median time inside the call (Python forward and
    its launches, none of the harness's flush, events, restores or output checks) and the device time comes
    from the reported pass; a loop issuing calls back to back runs at whichever is slower. Results recorded
    before `host_call_ms` existed use the whole enqueue time per iteration (the harness's work included). On
    the CPU the wall time is both.
    """
    if timing is None:
        return None
    host = timing.host_call_ms if timing.host_call_ms is not None else timing.host_enqueue_ms
    return max(timing.median_ms, host) if host is not None else timing.median_ms


def score_shape(result: ShapeResult, weight: float, profile: HardwareProfile, roofline: RooflineEntry | None,
                launch_floor_s: float | None, suspicious: bool = False, over_roofline_accepted: bool = False) -> ShapeScore:
    """S = T_SOL / T for a passed real kernel, 0 otherwise; S_raw ignores the fallback verdict.

    Held (S = 0, S_raw kept): a `suspicious` candidate, and S_raw > 1 (`over_roofline`) unless accepted."""
    real = bool(result.audit and result.audit.real)
    if roofline is None and result.roofline:
        r = result.roofline
        roofline = RooflineEntry.from_json(r)
    t_sol = bound(roofline, profile).t_sol_s if roofline else None
    bottleneck = bound(roofline, profile).bottleneck if roofline else None
    time_s = result.timing.median_ms / 1e3 if result.timing else None
    s_raw = t_sol / time_s if (result.passed and t_sol is not None and time_s) else 0.0
    s = s_raw if real else 0.0
    floor = max(t_sol or 0.0, launch_floor_s or 0.0)
    s_launch = floor / time_s if (result.passed and real and time_s and t_sol is not None) else 0.0
    verdict = result.status
    if result.passed and suspicious:
        verdict, s, s_launch = SUSPICIOUS, 0.0, 0.0
    elif result.passed and s_raw > 1.0 and not over_roofline_accepted:
        verdict, s, s_launch = OVER_ROOFLINE, 0.0, 0.0

    def speedup(baseline_ms: float | None) -> float | None:
        if baseline_ms is None or not result.passed or not result.timing:
            return None
        return baseline_ms / result.timing.median_ms

    e2e_ms = e2e_time_ms(result.timing)
    s_e2e_raw = t_sol * 1e3 / e2e_ms if (result.passed and t_sol is not None and e2e_ms) else 0.0
    return ShapeScore(result.shape_id, weight, result.passed, real,
                      None if t_sol is None else t_sol * 1e3, None if time_s is None else time_s * 1e3,
                      s, s_raw, s_launch, bottleneck,
                      speedup(result.eager_timing.median_ms if result.eager_timing else None),
                      speedup(result.compile_timing.median_ms if result.compile_timing else None), verdict,
                      e2e_ms, s_e2e_raw if (real and s > 0.0) else 0.0, s_e2e_raw,
                      speedup(result.compile_max_timing.median_ms if result.compile_max_timing else None))


def weighted_geomean(pairs: list[tuple[float, float | None]]) -> float | None:
    if not pairs or any(v is None or v <= 0 for _, v in pairs):
        return None
    if sum(w for w, _ in pairs) <= 0:
        pairs = [(1.0, v) for _, v in pairs]  # no weights at all: plain geometric mean
    total = sum(w for w, _ in pairs)
    return math.exp(sum(w * math.log(v) for w, v in pairs if w > 0) / total)  # type: ignore[arg-type,misc]


def score_op(problem: Problem, result: CandidateResult, profile: HardwareProfile,
             launch_floor_s: float | None = None) -> OpScore:
    """S_op = Σ w_s·S_s / Σ w_s over the evaluated shapes (failures count 0).

    The launch floor is the profile's calibrated empty-launch time, else the one the worker measured
    with the same timing protocol (`provenance.empty_launch_ms`); on the CPU there is none.
    """
    if launch_floor_s is None and result.provenance.get("empty_launch_ms"):
        launch_floor_s = float(result.provenance["empty_launch_ms"]) / 1e3
    shapes = []
    fuzz_failures = [s.shape_id for s in result.shapes if s.fuzz and s.status not in ("passed", "skipped")]
    suspicious = bool(result.suspicious) and not accepted(result, SUSPICIOUS)
    for shape_result in result.shapes:
        shape = None if shape_result.fuzz else problem.shape_by_id(shape_result.shape_id)
        if shape is None:
            continue
        shapes.append(score_shape(shape_result, shape.weight, profile, problem.roofline.get(shape.shape_id),
                                  launch_floor_s, suspicious, accepted(result, OVER_ROOFLINE, shape.shape_id)))
    holds = ([SUSPICIOUS] if suspicious else []) + \
        [f"{OVER_ROOFLINE}:{s.shape_id}" for s in shapes if s.verdict == OVER_ROOFLINE]
    total_w = sum(s.weight for s in shapes) or 1.0

    tampered = any(s.status == "tampered" for s in result.shapes)

    def mean(attr: str) -> float:
        if fuzz_failures or tampered:
            return 0.0  # correct only on the listed shapes is not a general kernel; caught tampering anywhere: none
        return sum(s.weight * getattr(s, attr) for s in shapes) / total_w

    correct = bool(shapes) and all(s.passed for s in shapes) and not fuzz_failures
    real = correct and all(s.real for s in shapes)
    return OpScore(
        problem.name, problem.importance, result.compiled, correct, real, mean("s"), mean("s_raw"),
        mean("s_launch"), shapes, fuzz_failures,
        weighted_geomean([(s.weight, s.speedup_vs_eager) for s in shapes]) if correct else None,
        weighted_geomean([(s.weight, s.speedup_vs_compile) for s in shapes]) if correct else None, holds,
        mean("s_e2e"), mean("s_e2e_raw"),
        weighted_geomean([(s.weight, s.speedup_vs_compile_max) for s in shapes]) if correct else None,
    )


def aggregate(ops: list[OpScore]) -> AggregateScore:
    """S_agg (normalised and raw-weight forms), pass rates, fast_1 against eager and torch.compile (default mode
    and max-autotune)."""
    n = len(ops)
    total_w = sum(o.weight for o in ops)

    def weighted(attr: str) -> float:
        if total_w <= 0:
            return sum(getattr(o, attr) for o in ops) / n if n else 0.0
        return sum(o.weight * getattr(o, attr) for o in ops) / total_w

    def fast_1(attr: str) -> float | None:
        measured = [o for o in ops if not o.correct or getattr(o, attr) is not None]
        if not n or all(getattr(o, attr) is None for o in ops):
            return None
        wins = [o for o in measured if o.correct and o.real and (getattr(o, attr) or 0.0) > 1.0]
        return len(wins) / n

    return AggregateScore(
        s_agg=weighted("s_op"), s_agg_raw_weight=sum(o.weight * o.s_op for o in ops),
        s_raw_agg=weighted("s_raw_op"), s_launch_agg=weighted("s_launch_op"), ops=n,
        compiled_rate=sum(o.compiled for o in ops) / n if n else 0.0,
        correct_rate=sum(o.correct for o in ops) / n if n else 0.0,
        correct_and_real_rate=sum(o.correct and o.real and not o.holds for o in ops) / n if n else 0.0,
        fast_1_vs_eager=fast_1("speedup_vs_eager"), fast_1_vs_compile=fast_1("speedup_vs_compile"),
        s_e2e_agg=weighted("s_e2e_op"), s_e2e_raw_agg=weighted("s_e2e_raw_op"),
        fast_1_vs_compile_max=fast_1("speedup_vs_compile_max"),
    )
