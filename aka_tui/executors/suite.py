"""Evaluate a candidate set (or a baseline) over a whole suite on an executor, and score it."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, resolve_device, resolve_profile, resolve_tier
from aka_tui.bench.measure.gpu_clocks import ClockSampler, clocks_record
from aka_tui.bench.measure.job import BASELINE_KINDS
from aka_tui.bench.measure.results import CandidateResult, ShapeResult, StageError
from aka_tui.bench.problem.model import Problem, Suite
from aka_tui.bench.roofline.hardware import HardwareProfile, get_profile
from aka_tui.bench.scoring.bench_report import BenchReport, find_candidate, launch_floor_s
from aka_tui.bench.scoring.score import OpScore, aggregate, score_op
from aka_tui.errors import EvaluationError
from aka_tui.executors.base import EvalJob, Executor, JobOutcome
from aka_tui.executors.local import LocalExecutor

# The baselines whose caches `precompile_workers` warms: the default-mode compile only. max-autotune benchmarks
# GEMM choices on the GPU while it compiles and inductor caches the winners, so processes compiling side by side
# would pick them under each other's load; its timed workers compile one shape at a time instead.
PRECOMPILED_BASELINES = ("compile",)


def precompiled_cache(baseline: str | None, options: EvalOptions) -> str | None:
    """Whose compiler caches `precompile_workers` warms in this run: the compile baseline's, or, for candidates
    timed beside torch.compile's default mode (`compare_compile`), those of the worker that times the
    baselines; None when the run compiles nothing it may warm."""
    if baseline is not None:
        return "compile" if baseline in PRECOMPILED_BASELINES else None
    return "baselines" if options.compare_compile and options.timing else None


def run_bench(suite: Suite, options: EvalOptions, baseline: str | None = None, candidates_dir: Path | None = None,
              ops: list[str] | None = None,
              progress: Callable[[str, str, Any], None] | None = None,  # result: ShapeResult, (shape, error) or None
              checkpoint: Callable[[BenchReport], None] | None = None,
              precompile_workers: int = 0, executor: Executor | None = None, naive: bool = False) -> BenchReport:
    """Evaluate every selected problem; missing candidates score 0 with status `no_candidate`. `naive`: also
    run the naive check on every candidate (recorded per shape, never scored)."""
    _check_request(baseline, candidates_dir)
    problems = _problems(suite, ops)
    executor = executor or LocalExecutor(options.device)
    # A remote executor's GPUs are not this machine's: its device and profiles come from the results.
    device = executor.device if executor.remote else resolve_device(options.device)
    profile: HardwareProfile | None = (
        resolve_profile(options, device) if not executor.remote or options.hardware else None)
    tier = resolve_tier(options, device)
    started = time.time()
    cache_kind = precompiled_cache(baseline, options)
    if cache_kind and precompile_workers > 0 and not executor.remote:
        from aka_tui.bench.evaluator.precompile import precompile

        pairs = [(str(p.directory.resolve()), s.shape_id) for p in problems for s in p.shapes_for(tier)]
        precompile(pairs, device, precompile_workers,
                   progress=(lambda op, shape, err: progress(op, "precompiled", (shape, err))) if progress else None,
                   job_timeout_s=options.limits.per_shape_s, cache_kind=cache_kind)
    selected = [p for p in problems if p.shapes_for(tier)]
    jobs, missing = _jobs(selected, tier, options, baseline, candidates_dir)
    lock = threading.Lock()
    label = f"baseline:{baseline}" if baseline else f"candidates:{candidates_dir}"

    finished: dict[str, CandidateResult] = dict(missing)
    in_flight: dict[str, list[ShapeResult]] = {}  # an operator's shapes so far, until its job ends
    profiles = _Profiles(profile)

    def save_checkpoint() -> None:
        """The report so far, an unfinished operator with the shapes it has (a killed run keeps what it measured)."""
        if not checkpoint:
            return
        so_far = dict(finished)
        for job in jobs:
            if job.key not in so_far and in_flight.get(job.key):
                n = len(job.problem.shapes_for(tier))
                so_far[job.key] = CandidateResult(
                    job.key, f"{job.spec.label} (partial: {len(in_flight[job.key])} of {n} shapes)", True,
                    list(in_flight[job.key]))
        done, partial_scores = _scored(selected, so_far, profiles)
        checkpoint(BenchReport(f"{label} (partial)", str(suite.directory), device, tier, profiles.headline(), done,
                               partial_scores, aggregate(partial_scores), round(time.time() - started, 1)))

    def on_shape(job: EvalJob, result: ShapeResult) -> None:
        with lock:
            if _put_shape(in_flight.setdefault(job.key, []), result) and progress:
                progress(job.key, "shape", result)
            save_checkpoint()

    clocks = _OpClocks(device, executor)
    with clocks:
        for outcome in executor.run(jobs, on_shape=on_shape):
            profiles.saw(outcome)
            finished[outcome.job.key] = outcome.result
            clocks.op_done(outcome.job.key)
            if progress:
                with lock:
                    progress(outcome.job.key, "op_done", None)
            with lock:
                in_flight.pop(outcome.job.key, None)
                save_checkpoint()
    if naive and jobs:
        _attach_naive_verdicts(executor, jobs, finished, progress, lock)
    results, scores = _scored(selected, finished, profiles)
    names = profiles.names()
    from aka_tui.bench.scoring.weights import weight_summary

    return BenchReport(label, str(suite.directory), device, tier, profiles.headline(), results, scores,
                       aggregate(scores), round(time.time() - started, 1), {k: str(v) for k, v in suite.errors.items()},
                       executor=executor.name, slots=executor.describe(),
                       mixed_hardware=names if len(names) > 1 else [],
                       weights=weight_summary(selected, suite.directory, tier),
                       gpu_clocks=clocks.record())


def _put_shape(shapes: list[ShapeResult], result: ShapeResult) -> bool:
    """Add a shape's result, or replace the earlier one of the same shape (reported again with its baselines
    timed); True when it is new."""
    earlier = next((i for i, s in enumerate(shapes) if s.shape_id == result.shape_id), None)
    if earlier is None:
        shapes.append(result)
        return True
    shapes[earlier] = result
    return False


class _OpClocks:
    """The GPU's clocks through a local CUDA run (nvidia-smi) and each operator's span, the spans only when the
    operators run one at a time (one slot): with several, which GPU held down which operator is not known."""

    def __init__(self, device: str, executor: Executor) -> None:
        self.sampler = ClockSampler() if device.startswith("cuda") and not executor.remote else None
        self.one_at_a_time = not executor.remote and len(executor.describe()) == 1
        self.windows: dict[str, tuple[float, float]] = {}
        self.last_end = time.time()

    def __enter__(self) -> _OpClocks:
        if self.sampler:
            self.sampler.__enter__()
        self.last_end = time.time()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sampler:
            self.sampler.__exit__(*exc)

    def op_done(self, key: str) -> None:
        if self.one_at_a_time:
            now = time.time()
            self.windows[key] = (self.last_end, now)
            self.last_end = now

    def record(self) -> dict[str, Any]:
        return clocks_record(self.sampler.samples, self.windows) if self.sampler else {}


def _check_request(baseline: str | None, candidates_dir: Path | None) -> None:
    if (baseline is None) == (candidates_dir is None):
        raise EvaluationError(f"give exactly one of --baseline {'|'.join(BASELINE_KINDS)} or --candidates DIR")
    if baseline is not None and baseline not in BASELINE_KINDS:
        raise EvaluationError(f"unknown baseline {baseline!r}: use one of {', '.join(BASELINE_KINDS)}")
    if candidates_dir is not None and not candidates_dir.is_dir():
        raise EvaluationError(f"candidates directory {candidates_dir} does not exist")


def _problems(suite: Suite, ops: list[str] | None) -> list[Problem]:
    """The suite's problems, or those named by `ops` in that order."""
    if not ops:
        return list(suite.problems.values())
    unknown = [o for o in ops if o not in suite.problems]
    if unknown:
        raise EvaluationError(f"unknown problem(s) {', '.join(unknown)}; known: {', '.join(suite.problems)}")
    return [suite.problems[o] for o in ops]


def _jobs(selected: list[Problem], tier: str, options: EvalOptions, baseline: str | None,
          candidates_dir: Path | None) -> tuple[list[EvalJob], dict[str, CandidateResult]]:
    """One job per problem with a candidate (the baseline, or its file in `candidates_dir`); a problem without
    one gets its result at once: every shape `no_candidate`."""
    jobs: list[EvalJob] = []
    missing: dict[str, CandidateResult] = {}
    for problem in selected:
        if baseline is not None:
            spec: CandidateSpec | None = CandidateSpec(baseline)
        else:
            path = find_candidate(candidates_dir, problem)  # type: ignore[arg-type]
            spec = CandidateSpec.file(path) if path else None
        if spec is None:
            shapes = problem.shapes_for(tier)
            error = StageError("compile", "no_candidate", f"no candidate for {problem.name} in {candidates_dir}")
            missing[problem.name] = CandidateResult(
                problem.name, "none", False, [ShapeResult(s.shape_id, "no_candidate", [], error) for s in shapes],
                {}, error)
        else:
            jobs.append(EvalJob(problem.name, problem, spec, options))
    return jobs, missing


class _Profiles:
    """The hardware profile each result is scored against: that of the GPU that measured it (recorded by name in
    its provenance; a remote executor also ships the profile itself, which may be a node's measured one)."""

    def __init__(self, profile: HardwareProfile | None) -> None:
        self.fixed = profile  # this machine's (or the one asked for); None for a remote executor
        self.by_name: dict[str, HardwareProfile] = {profile.name: profile} if profile else {}
        self.used: list[str] = []  # the profile of every result so far, by name

    def saw(self, outcome: JobOutcome) -> None:
        name = outcome.result.provenance.get("hardware_profile")
        if name:
            if outcome.profile is not None:
                self.by_name.setdefault(str(name), outcome.profile)
            self.used.append(str(name))

    def headline(self) -> HardwareProfile:
        """The report's profile: the fixed one, else the model that measured most ops."""
        if self.fixed is not None:
            return self.fixed
        if self.used:
            return self.by_name[max(set(self.used), key=self.used.count)]
        return get_profile("cpu")  # nothing ran yet

    def of(self, result: CandidateResult) -> HardwareProfile:
        name = result.provenance.get("hardware_profile")
        if not name:
            return self.headline()
        if name not in self.by_name:
            self.by_name[name] = get_profile(str(name))
        return self.by_name[name]

    def names(self) -> list[str]:
        return sorted(set(self.used) | ({self.fixed.name} if self.fixed else set()))


def _scored(selected: list[Problem], finished: dict[str, CandidateResult],
            profiles: _Profiles) -> tuple[list[CandidateResult], list[OpScore]]:
    """The finished results in suite order, each scored against its own profile."""
    done = [finished[p.name] for p in selected if p.name in finished]
    by_name = {p.name: p for p in selected}
    return done, [score_op(by_name[r.problem], r, profiles.of(r), launch_floor_s(profiles.of(r))) for r in done]


def _attach_naive_verdicts(executor: Executor, jobs: list[EvalJob], finished: dict[str, CandidateResult],
                           progress: Callable[[str, str, ShapeResult | None], None] | None,
                           lock: threading.Lock) -> None:
    """The naive check (what many harnesses stop at: one input, allclose 1e-2, no poisoning, fuzzing, attribution
    or timing) over the same shapes, each verdict recorded beside the hardened one as `naive_passed`."""
    from dataclasses import replace

    naive_jobs = [EvalJob(j.key, j.problem, j.spec, replace(j.options, hardening=False, cases=1, timing=False,
                                                             fuzz=0, compare_eager=False, compare_compile=False,
                                                             compare_compile_max=False)) for j in jobs]
    for outcome in executor.run(naive_jobs):
        verdicts = {s.shape_id: s.passed for s in outcome.result.shapes}
        hardened = finished[outcome.job.key]
        hardened.shapes = [replace(s, naive_passed=verdicts[s.shape_id]) if not s.fuzz and s.shape_id in verdicts
                           else s for s in hardened.shapes]
        if progress:
            with lock:
                progress(outcome.job.key, "naive_done", None)
