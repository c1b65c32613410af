"""Evaluate one candidate on one problem: the public API of the evaluator."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.evaluator.isolation import WorkerOutcome, run_job
from aka_tui.bench.evaluator.worker_process import WorkerLimits, WorkerProcess, start_ahead
from aka_tui.bench.measure.attribution import DEFAULT_OWN_SHARE_THRESHOLD
from aka_tui.bench.measure.job import (
    BASELINE_KINDS,
    DEFAULT_CASES,
    DEFAULT_CPU_REPS,
    DEFAULT_FP64_FLOP_LIMIT,
    DEFAULT_INPUT_SETS,
    CandidateRef,
    MeasureJob,
)
from aka_tui.bench.measure.parent_check import check_outcome
from aka_tui.bench.measure.results import BASELINE_TIMING_FIELDS, SCHEMA_VERSION, CandidateResult, ShapeResult
from aka_tui.bench.measure.static_scan import scan_source
from aka_tui.bench.problem.fuzz import domain_error, fuzz_shapes, resolve_shape
from aka_tui.bench.problem.model import Problem, RooflineEntry
from aka_tui.bench.roofline.bound import write_cache
from aka_tui.bench.roofline.hardware import HardwareProfile, detect_profile, get_profile
from aka_tui.errors import EvaluationError
from aka_tui.secrets import scrub


@dataclass(frozen=True)
class CandidateSpec:
    """What to evaluate: a candidate file, or the reference itself as a baseline (eager, torch.compile,
    torch.compile with max-autotune: job.BASELINE_KINDS)."""

    kind: str  # "file" | "eager" | "compile" | "compile-max-autotune"
    path: Path | None = None

    @property
    def label(self) -> str:
        return str(self.path) if self.kind == "file" else self.kind

    @staticmethod
    def file(path: str | Path) -> CandidateSpec:
        resolved = Path(path).resolve()
        if not resolved.is_file():
            what = "is a directory, not a file" if resolved.is_dir() else "does not exist"
            raise EvaluationError(f"candidate file {path} {what}")
        return CandidateSpec("file", resolved)


@dataclass
class EvalOptions:
    """How to evaluate (device, tier, cases, timing, baselines to time alongside)."""

    device: str = "auto"
    tier: str | None = None  # None: smoke on the CPU, full on a GPU
    cases: int = DEFAULT_CASES
    input_sets: int = DEFAULT_INPUT_SETS
    timing: bool = True
    compare_eager: bool = False
    compare_compile: bool = False
    compare_compile_max: bool = False  # torch.compile(mode="max-autotune") of the reference
    hardware: str | None = None
    measured: bool = False
    shape_ids: list[str] | None = None
    fp64_flop_limit: float = DEFAULT_FP64_FLOP_LIMIT
    cpu_reps: int = DEFAULT_CPU_REPS
    fuzz: int | None = None  # fuzzed shapes per candidate (None: 4 for candidate files, 0 for baselines)
    replay_seed: int | None = None  # run exactly this seed as the only correctness case
    seed_salt: str | None = None  # None: drawn per evaluation, unless $AKA_FIXED_SEEDS=1 ("": the fixed seeds)
    own_share_threshold: float = DEFAULT_OWN_SHARE_THRESHOLD
    visible_devices: str | None = None  # set by an executor: the physical GPU the worker is pinned to
    hardening: bool = True  # False: the naive check (one case, allclose, no poison/audit/fuzz/tamper checks)
    verify_timed: bool = True  # False: timed calls unchecked (outputs, launches, device time): to measure the cost
    limits: WorkerLimits = field(default_factory=WorkerLimits)


def resolve_device(device: str) -> str:
    """'auto' → 'cuda' when torch sees a GPU, else 'cpu'; a CUDA request without a GPU is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EvaluationError("--device cuda asked for, but torch sees no CUDA device (use --device cpu)")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise EvaluationError(f"unknown device {device!r}: use cpu, cuda or cuda:N")
    return device


def resolve_profile(options: EvalOptions, device: str) -> HardwareProfile:
    if options.hardware:
        return get_profile(options.hardware)
    return detect_profile(device, prefer_measured=options.measured)


def resolve_tier(options: EvalOptions, device: str) -> str:
    return options.tier or ("full" if device.startswith("cuda") else "smoke")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def library_versions() -> dict[str, str]:
    import torch

    versions = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = "missing"
    return versions


def parent_index(device: str) -> int:
    import torch

    return torch.device(device).index if ":" in device else torch.cuda.current_device()


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return platform.processor() or platform.machine()


def evaluate_candidate(problem: Problem, candidate: CandidateSpec, options: EvalOptions,
                       on_shape: Callable[[ShapeResult], None] | None = None,
                       on_shape_start: Callable[[str], None] | None = None,
                       ahead: WorkerProcess | None = None) -> CandidateResult:
    """Compile → correctness → audit → timing per shape, each candidate in its own worker process. `ahead`: its
    first worker, started by `start_worker_ahead` while something else ran (used when it fits the job)."""
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    tier = resolve_tier(options, device)
    shapes = _selected_shapes(problem, options, tier)
    fuzz_count = _fuzz_count(candidate, options)
    fuzzed = [] if options.shape_ids else fuzz_shapes(problem, shapes[:2], fuzz_count, cpu=device == "cpu")
    job = build_job(problem, candidate, options, device, profile, [s.shape_id for s in shapes],
                    [s.shape_id for s in fuzzed])
    started = time.time()
    outcome = _run(job, options, device, on_shape, on_shape_start, problem, ahead)
    cache_new_rooflines(problem, outcome.shapes)
    provenance = {
        "schema_version": SCHEMA_VERSION, "problem_hash": problem.content_hash, "tier": tier, "device": device,
        "device_name": device_name(device), "hardware_profile": profile.name, "timer":
        "cuda_events" if device.startswith("cuda") else "perf_counter", "versions": library_versions(),
        "candidate_sha256": _sha256(candidate.path) if candidate.path else None,
        "started_unix": started, "wall_s": round(time.time() - started, 3),
        "empty_launch_ms": outcome.empty_launch_ms,
        "checks": {"timed_calls_verified": job.verify_timed and job.hardening, "parent_check": job.hardening,
                   "baselines_in_own_worker": bool(_baselines_wanted(job, options)), "seconds": outcome.seconds,
                   "case_seeds": "salted per evaluation" if job.seed_salt else "fixed"},
        "sandbox": outcome.sandbox.get("mechanism", "none"), "sandbox_detail": outcome.sandbox,
    }
    findings = scan_source(candidate.path.read_text(errors="replace")) if candidate.path else []
    result = CandidateResult(problem.name, candidate.label, outcome.compiled, outcome.shapes, provenance,
                             outcome.compile_error, [str(f) for f in findings],
                             [str(f) for f in findings if f.suspicious])
    return scrubbed(result)


def _selected_shapes(problem: Problem, options: EvalOptions, tier: str) -> list[Any]:
    """The shapes an evaluation runs: `options.shape_ids`, else the tier's."""
    shapes = problem.shapes_for(tier)
    if options.shape_ids:
        for shape_id in options.shape_ids:
            if domain_error(problem, shape_id):
                raise EvaluationError(f"--shape {shape_id}: {domain_error(problem, shape_id)}")
        resolved = {s: resolve_shape(problem, s) for s in options.shape_ids}
        unknown = [s for s, shape in resolved.items() if shape is None]
        if unknown:
            raise EvaluationError(f"{problem.name} has no shape(s) {', '.join(unknown)}; "
                                  f"known: {', '.join(problem.shapes)}")
        shapes = [shape for shape in resolved.values() if shape is not None]
    if not shapes:
        tiers = sorted({s.tier for s in problem.shapes.values()})
        raise EvaluationError(f"{problem.name} has no {tier!r} shapes (tiers: {', '.join(tiers) or 'none'}); "
                              + (f"choose one with --tier {tiers[0]}" if tiers else "its shapes.json lists none"))
    return shapes


def _fuzz_count(candidate: CandidateSpec, options: EvalOptions) -> int:
    if not options.hardening or options.shape_ids:
        return 0
    return options.fuzz if options.fuzz is not None else (4 if candidate.kind == "file" else 0)


def starts_ahead(device: str) -> bool:
    """Whether workers are started ahead (their imports while the previous evaluation runs): on a GPU, where a
    worker's start is ~9 s (H100, 2026-12-06) and the machine has cores to spare; not on the CPU, where the
    imports would share the cores with the timing. $AKA_START_AHEAD=0 turns it off."""
    return device.startswith("cuda") and os.environ.get("AKA_START_AHEAD", "1") != "0"


def start_worker_ahead(problem: Problem, candidate: CandidateSpec, options: EvalOptions) -> WorkerProcess | None:
    """The first worker of `evaluate_candidate(problem, candidate, options)`, started now and waiting (imports
    done, no GPU touched) for its job; pass it as `ahead`. None where workers are not started ahead or it cannot
    start (starting ahead only saves time, it never fails an evaluation)."""
    try:
        device = resolve_device(options.device)
        if not starts_ahead(device):
            return None
        shapes = _selected_shapes(problem, options, resolve_tier(options, device))
        job = build_job(problem, candidate, options, device, resolve_profile(options, device),
                        [s.shape_id for s in shapes], [f"ahead-{i}" for i in range(_fuzz_count(candidate, options))])
    except Exception:
        return None
    return start_ahead(job, options.limits)


def scrubbed(result: CandidateResult) -> CandidateResult:
    """The result with every secret (plain or encoded) replaced: candidates' messages and logs are in it."""
    text = json.dumps(result.to_json())
    clean = scrub(text)
    return result if clean == text else CandidateResult.from_json(json.loads(clean))


def build_job(problem: Problem, candidate: CandidateSpec, options: EvalOptions, device: str,
              profile: HardwareProfile, shape_ids: list[str], fuzz_ids: list[str]) -> MeasureJob:
    """The one place a worker's job is made from the options."""
    return MeasureJob(
        problem_dir=str(problem.directory.resolve()),
        candidate=CandidateRef(candidate.kind, str(candidate.path) if candidate.path else None),
        shape_ids=shape_ids + fuzz_ids, fuzz_shape_ids=fuzz_ids,
        # A pinned worker sees one GPU (its own cuda:0); the parent knows it as `device`.
        device="cuda" if options.visible_devices is not None and device.startswith("cuda") else device,
        visible_devices=options.visible_devices, cases=options.cases,
        seeds=[options.replay_seed] if options.replay_seed is not None else None,
        input_sets=options.input_sets, timing=options.timing, hardening=options.hardening,
        verify_timed=options.verify_timed, own_share_threshold=options.own_share_threshold, l2_bytes=profile.l2_bytes,
        fp64_flop_limit=options.fp64_flop_limit, cpu_reps=options.cpu_reps, sample_seed=secrets.randbits(62),
        seed_salt=evaluation_salt(options))


def evaluation_salt(options: EvalOptions) -> str:
    """The salt of an evaluation's case seeds: fresh random bytes, so inputs cannot be predicted from an earlier
    evaluation (outputs a candidate stored in its compiler cache then never match); the fixed seeds of
    `sha256(problem/shape/case)` when asked for (`seed_salt=""`, or $AKA_FIXED_SEEDS=1 for reproducible runs)."""
    if options.seed_salt is not None:
        return options.seed_salt
    return "" if os.environ.get("AKA_FIXED_SEEDS") == "1" else secrets.token_hex(8)


def _baselines_wanted(job: MeasureJob, options: EvalOptions) -> list[str]:
    if not options.timing:
        return []
    wanted = {"eager": options.compare_eager, "compile": options.compare_compile,
              "compile-max-autotune": options.compare_compile_max}
    return [kind for kind in BASELINE_KINDS if wanted[kind] and job.candidate.kind != kind]


def _run(job: MeasureJob, options: EvalOptions, device: str, on_shape: Callable[[ShapeResult], None] | None,
         on_shape_start: Callable[[str], None] | None, problem: Problem, ahead: WorkerProcess | None = None
         ) -> WorkerOutcome:
    """The candidate's worker, the parent's check of its report, then the baselines in a worker of their own
    (nothing a baseline starts, such as inductor's threads, can be blamed on the candidate); all under the
    GPU's lock on CUDA. `on_shape` hears each shape when the candidate's worker reports it, and a timed shape
    a second time (same shape_id, the parent's checked result) once its baselines are timed. The baselines'
    worker is started ahead, while the candidate's runs, where workers are (`starts_ahead`)."""
    lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if device.startswith("cuda"):
        from aka_tui.bench.evaluator.gpu_lock import exclusive_gpu, gpu_identity

        lock = exclusive_gpu(gpu_identity(parent_index(device)))
    baselines = _baselines_wanted(job, options)
    shape_ids = [s for s in job.shape_ids if s not in set(job.fuzz_shape_ids)]
    baselines_job = replace(job, candidate=CandidateRef("baselines"), shape_ids=shape_ids, fuzz_shape_ids=[],
                            baselines=baselines)
    baselines_ahead = start_ahead(baselines_job, options.limits) if baselines and starts_ahead(device) else None
    try:
        with lock:
            outcome = run_job(job, options.limits, on_shape, on_shape_start, ahead=ahead)
            started = time.perf_counter()
            outcome.shapes = check_outcome(problem, job, device, outcome.shapes, outcome.evidence)
            outcome.seconds["parent_check"] = round(time.perf_counter() - started, 3)
            timed = [s.shape_id for s in outcome.shapes if s.passed and not s.fuzz]
            if baselines and timed:
                started = time.perf_counter()
                checked = {s.shape_id: s for s in outcome.shapes}

                def baseline_timed(baseline: ShapeResult) -> None:
                    # Each shape again, with its baseline times, as soon as they are measured: a run stopped
                    # while the baselines are timed (a slow torch.compile, a deadline) keeps the ones that finished.
                    shape = checked.get(baseline.shape_id)
                    if on_shape and shape is not None and baseline.passed:
                        on_shape(_with_baselines(shape, baseline))

                extra, baselines_ahead = baselines_ahead, None  # run_job owns it now
                by_id = {s.shape_id: s for s in run_job(replace(baselines_job, shape_ids=timed), options.limits,
                                                        baseline_timed, ahead=extra).shapes}
                outcome.shapes = [_with_baselines(s, by_id.get(s.shape_id)) for s in outcome.shapes]
                outcome.seconds["baselines_worker"] = round(time.perf_counter() - started, 3)
    finally:
        if baselines_ahead is not None:
            baselines_ahead.discard()
    return outcome


def _with_baselines(result: ShapeResult, baseline: ShapeResult | None) -> ShapeResult:
    if baseline is not None and not baseline.passed and baseline.error is not None:
        return replace(result, verification=result.verification | {
            "baselines": f"not timed: {baseline.error.message}"[:400]})
    if baseline is None or not baseline.passed:
        return result
    return replace(result, **{name: getattr(baseline, name) for name in BASELINE_TIMING_FIELDS.values()})


def cache_new_rooflines(problem: Problem, shapes: list[ShapeResult]) -> None:
    """Rooflines the worker had to compute are kept in the problem's cache file."""
    added = False
    for result in shapes:
        r = result.roofline
        if r and r.get("computed_now") and result.shape_id not in problem.roofline:
            problem.roofline[result.shape_id] = RooflineEntry.from_json(r)
            added = True
    if added:
        try:
            write_cache(problem)
        except OSError:
            pass  # a read-only suite still evaluates; the roofline is recomputed next time
