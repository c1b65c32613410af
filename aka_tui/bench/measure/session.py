"""One worker's measurement session: the public per-shape path (inputs → reference → candidate → compare →
time → attribute) for the evaluator's worker, and the timing of baselines in a worker of their own."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder
from aka_tui.bench.measure.calls import Call, MeasureFailure, run_calls, trace_of
from aka_tui.bench.measure.cases import ShapeCases, audit_seed, case_seeds, problem_call, reference_model
from aka_tui.bench.measure.integrity import CompilerImportedLate, IntegritySnapshot, ThreadStartCounter
from aka_tui.bench.measure.job import COMPILE_MODES, MeasureJob
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.results import PASSED, AuditReport, ShapeResult, TimingStats
from aka_tui.bench.measure.timed_checks import drive_protocol
from aka_tui.bench.measure.timing import Timers, TimingHooks, cpu_protocol, cuda_protocol
from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.model import COMPILE_FORM, Problem, Shape
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.bench.problem.settled_order import import_reference
from aka_tui.bench.problem.tolerance import compare_outputs


@dataclass
class Session:
    """What one worker holds for all shapes of its job (the candidate is imported after `snapshot`)."""

    job: MeasureJob
    problem: Problem
    ref_module: Any
    input_module: Any
    model_cls: Any
    module_name: str
    timers: Timers
    recorder: TritonLaunchRecorder
    snapshot: IntegritySnapshot | None = None
    thread_starts: ThreadStartCounter | None = None
    secret: int = field(default_factory=lambda: secrets.randbits(62))  # where timed calls are sampled

    @property
    def device(self) -> str:
        return self.job.device

    @property
    def is_file(self) -> bool:
        return self.job.candidate.is_file

    def replay_hint(self, shape_id: str, seed: int) -> str:
        cand = self.job.candidate.path or self.job.candidate.kind
        return f"replay: aka eval {cand} --problem {self.problem.directory} --shape '{shape_id}' --replay-seed {seed}"

    def check_integrity(self, stage: str) -> None:
        if self.snapshot is None or not (self.is_file and self.job.hardening):
            return
        changed = self.snapshot.changed()
        if changed and self.snapshot.dynamo_arrived():
            raise CompilerImportedLate(stage)
        if changed:
            shown = ", ".join(changed[:8]) + (f" (+{len(changed) - 8} more)" if len(changed) > 8 else "")
            raise MeasureFailure("tampered", stage, f"what the harness relies on was replaced: {shown}")

    def plan_options(self, fuzz: bool) -> PlanOptions:
        job, hardened = self.job, self.job.hardening
        return PlanOptions(device=job.device, hardened=hardened, verify_timed=job.verify_timed, timing=job.timing,
                           audit=self.is_file and hardened, watch_threads=self.is_file and hardened,
                           evidence=self.is_file, n_sets=job.input_sets, cpu_reps=job.cpu_reps, l2_bytes=job.l2_bytes,
                           own_share_threshold=job.own_share_threshold, fuzz=fuzz)


def roofline_entry(session: Session, shape: Shape) -> dict[str, Any]:
    cached = session.problem.roofline.get(shape.shape_id)
    if cached is not None:
        return cached.to_json()
    from aka_tui.bench.roofline.bound import (
        measure_entry,  # imports triton.language: never before the interpreter is set
    )

    problem, device = session.problem, session.device
    seed = derive_seed(problem.name, shape.shape_id, 0, "roofline")
    entry = problem_call(lambda: measure_entry(
        problem, shape, session.ref_module, lambda: make_inputs(problem, session.input_module, shape, device, seed),
        lambda: session.ref_module.Model(**shape.init_kwargs).to(device).eval()), "roofline")
    return entry.to_json() | {"computed_now": True}


def build_candidate_model(model_cls: Any, shape: Shape, ref_model: torch.nn.Module, device: str) -> Any:
    """`Model(**init_kwargs)` of a candidate, on the device, with the reference's weights; its failure is the
    candidate's (`runtime_error` at stage init)."""
    try:
        cand = model_cls(**shape.init_kwargs)
        if isinstance(cand, torch.nn.Module):
            cand = cand.to(device).eval()
            state = ref_model.state_dict()
            if state:
                cand.load_state_dict(state)
    except Exception as exc:
        raise MeasureFailure("runtime_error", "init", f"Model(**init_kwargs) raised {type(exc).__name__}: {exc}",
                             trace_of(exc)) from None
    return cand


def compile_form_model(problem: Problem, shape: Shape, ref_model: torch.nn.Module, device: str) -> Any:
    """The problem's compile form (`compile_form.py`), built as the reference is and given its weights; None
    where the problem has none."""
    path = problem.compile_form_path
    if path is None:
        return None

    def build() -> torch.nn.Module:
        form = import_reference(path, "compile_form").Model(**shape.init_kwargs).to(device).eval()
        state = ref_model.state_dict()
        if state:
            form.load_state_dict(state)
        return form
    return problem_call(build, "compile form init")


def baseline_model(kind: str, ref_model: torch.nn.Module, form: Any = None) -> Any:
    """The reference as the baseline `kind` runs it: itself (eager), or torch.compile'd in the kind's mode (the
    problem's compile form in its place where there is one: a reference that loops in Python over a batch
    unrolls into a graph inductor takes minutes to compile, which no one would deploy).

    Dynamo's in-memory caches are dropped before each compile: one worker compiles the reference for every
    shape, in up to two modes, and past dynamo's recompile limit (8 per code object) it would run the rest
    eagerly without a word. The on-disk caches (inductor's FX graphs, Triton kernels) are kept; dropping
    dynamo's state also frees the CUDA graphs a previous max-autotune compile recorded."""
    if kind == "eager":
        return ref_model
    torch._dynamo.reset()
    return torch.compile(form if form is not None else ref_model, mode=COMPILE_MODES[kind], dynamic=False)


class WrittenInputsAsOutputs:
    """A forward whose reference returns None (it works in place): the named inputs, as the forward left them,
    are its output, whatever it returns."""

    def __init__(self, model: Any, names: tuple[str, ...]) -> None:
        self.model, self.names = model, names

    def __call__(self, **inputs: Any) -> dict[str, Any]:
        self.model(**inputs)
        return {name: inputs[name] for name in self.names}


def build_candidate(session: Session, shape: Shape, cases: ShapeCases) -> Any:
    """The candidate's Model (or the reference itself for a baseline), read through the inputs it writes when
    the reference returns None (known once the first case is built)."""
    kind = session.job.candidate.kind
    if kind in COMPILE_MODES or kind == "eager":
        form = compile_form_model(session.problem, shape, cases.ref_model, session.device) \
            if kind in COMPILE_MODES else None
        model = baseline_model(kind, cases.ref_model, form)
    else:
        model = build_candidate_model(session.model_cls, shape, cases.ref_model, session.device)
    cases.case(0)
    return model if cases.in_place_outputs is None else WrittenInputsAsOutputs(model, cases.in_place_outputs)


def measure_shape(session: Session, shape: Shape, fuzz: bool) -> tuple[ShapeResult, list[dict[str, Any]]]:
    """All stages for one shape; a failure at any stage ends the shape with its verdict. Returns the result and
    the evidence for the parent (the checked cases' outputs at the parent's sample positions)."""
    job, problem = session.job, session.problem
    seeds: list[int] = []
    roofline: dict[str, Any] | None = None
    precision = None
    plan: ShapePlan | None = None
    try:
        roofline = None if fuzz else roofline_entry(session, shape)
        flops = roofline["flops"] if roofline else 0.0
        use_fp64 = job.hardening and problem.fp64_reference and flops <= job.fp64_flop_limit
        seeds = case_seeds(problem, shape, job.cases, job.seeds, job.seed_salt)
        precision = "float64" if use_fp64 else "native"
        audited = job.hardening and not fuzz and session.is_file  # candidate files are audited (plan_options)
        cases = ShapeCases(problem, shape, session.device, session.ref_module, session.input_module, seeds, use_fp64,
                           job.sample_seed, session.secret, naive=not job.hardening,
                           audit_seed=audit_seed(problem, shape, job.seed_salt) if audited else None)
        model = build_candidate(session, shape, cases)
        plan = ShapePlan(problem, cases, session.plan_options(fuzz), session.timers, session.recorder,
                         session.thread_starts, session.module_name, session.check_integrity,
                         lambda seed: session.replay_hint(shape.shape_id, seed))
        measured = run_calls(model, plan.run(), plan.watch_call)
        audit = measured.audit
        if audit is None and not fuzz:
            audit = AuditReport(real=False, method="baseline", reason=_baseline_reason(job.candidate.kind, problem)) \
                if not session.is_file else AuditReport(real=False, method="none", reason="naive check: no attribution")
        precision = cases.precision  # "native (why)" when the float64 reference could not run
        result = ShapeResult(shape.shape_id, PASSED, seeds, None, precision, measured.max_abs, measured.max_rel,
                             measured.timing, audit, roofline, fuzz=fuzz, verification=measured.verification)
        return result, measured.evidence
    except MeasureFailure as failure:
        error = failure.error
        seeds = plan.seeds_run if plan is not None else []  # up to the failing case, which is the last
        if fuzz and error.kind == "problem_error":
            # The fuzzed combination is outside what the reference accepts: not a verdict on the candidate.
            error = replace(error, kind="skipped", message="fuzzed shape rejected by the reference: " + error.message)
        return ShapeResult(shape.shape_id, error.kind, seeds, error, precision, roofline=roofline, fuzz=fuzz), []


def measure_baselines(session: Session, shape: Shape) -> ShapeResult:
    """Time the job's baselines (eager, compiled, compiled with max-autotune) on the shape's timing sets (the
    candidate's case seeds), in this worker of their own, so nothing they start (inductor's threads and
    processes, max-autotune's benchmarking) is blamed on a candidate."""
    job, problem = session.job, session.problem
    seeds = case_seeds(problem, shape, max(1, min(job.cases, job.input_sets)), job.seeds, job.seed_salt)
    timings: dict[str, TimingStats] = {}
    try:
        sets = [problem_call(lambda s=s: make_inputs(problem, session.input_module, shape, session.device, s), "inputs")  # type: ignore[misc]  # mypy cannot infer a lambda with default arguments
                for s in seeds]
        ref_model = reference_model(problem, shape, session.ref_module, session.device)
        hooks = TimingHooks(harness_seconds=lambda: session.recorder.own_seconds)
        form = compile_form_model(problem, shape, ref_model, session.device) \
            if any(kind in COMPILE_MODES for kind in job.baselines) else None
        for kind in job.baselines:
            model = baseline_model(kind, ref_model, form if kind in COMPILE_MODES else None)
            if form is not None and kind in COMPILE_MODES:
                check_compile_form(problem, model, ref_model, sets[0], kind)
            protocol = cuda_protocol(len(sets), session.timers, job.l2_bytes, hooks) \
                if session.device.startswith("cuda") else cpu_protocol(len(sets), session.timers, job.cpu_reps, hooks)
            timings[kind] = run_calls(model, _timing_only(protocol, sets)).stats
    except MeasureFailure as failure:
        return ShapeResult(shape.shape_id, failure.error.kind, seeds, failure.error)
    return ShapeResult(shape.shape_id, PASSED, seeds, eager_timing=timings.get("eager"),
                       compile_timing=timings.get("compile"), compile_max_timing=timings.get("compile-max-autotune"))


def _baseline_reason(kind: str, problem: Problem) -> str:
    form = f", its {COMPILE_FORM}" if kind in COMPILE_MODES and problem.compile_form_path is not None else ""
    return f"PyTorch reference ({kind} baseline{form})"


def check_compile_form(problem: Problem, compiled: Any, ref_model: torch.nn.Module, inputs: dict[str, Any],
                       kind: str) -> None:
    """The compiled form's outputs on one timing set against the reference's (each on its own copy of the
    inputs, which either may write): a form that disagrees is the baseline's failure, never a timing."""
    def run(model: Any) -> Any:
        copy = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        with torch.no_grad():
            return problem_call(lambda: model(**copy), f"{kind} of the compile form")
    expected = run(ref_model)
    got = run(compiled)
    verdict = compare_outputs(got, expected, expected, problem.tolerance_for, problem.max_mismatch_fraction)
    if not verdict.ok:
        raise MeasureFailure("wrong_output", "correctness",
                             f"{kind}: the problem's {COMPILE_FORM} disagrees with the reference: {verdict.reason}")


def _timing_only(protocol: Any, sets: list[dict[str, Any]]) -> Any:
    return (yield from drive_protocol(protocol, sets))


__all__ = ["Call", "Session", "baseline_model", "build_candidate", "build_candidate_model", "measure_baselines", "measure_shape",
           "roofline_entry"]
