"""Inside the worker process: compile → per shape: correctness → audit → timing → roofline.

Every failure of the candidate becomes a ShapeResult; the parent (`isolation.py`) handles crashes and
hangs that kill or stall this process.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch

from aka_tui.bench.audit import AtenAuditMode, TritonLaunchRecorder, build_report
from aka_tui.bench.inputs import clone_inputs, make_inputs, upcast_inputs
from aka_tui.bench.module_loading import import_file
from aka_tui.bench.problem import Problem, Shape, load_problem
from aka_tui.bench.results import PASSED, AuditReport, ShapeResult, StageError, TimingStats
from aka_tui.bench.roofline import measure_entry
from aka_tui.bench.seeds import derive_seed
from aka_tui.bench.timing import Timers, time_cpu, time_cuda
from aka_tui.bench.tolerance import compare_outputs
from aka_tui.errors import AkaError

CUDA_FATAL_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure",
                      "misaligned address", "illegal instruction", "CUDA error: an illegal")
EXIT_RESTART = 3  # the CUDA context is unusable: the parent starts a fresh worker for the rest


@dataclass
class WorkerContext:
    """What one worker holds for all shapes of its job."""

    job: dict[str, Any]
    problem: Problem
    ref_module: Any
    input_module: Any
    candidate_model_cls: Any
    candidate_module_name: str
    timers: Timers
    recorder: TritonLaunchRecorder

    @property
    def device(self) -> str:
        return str(self.job["device"])

    @property
    def kind(self) -> str:
        return str(self.job["candidate"]["kind"])


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _is_cuda_fatal(exc: BaseException) -> bool:
    text = str(exc)
    return any(marker in text for marker in CUDA_FATAL_MARKERS)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


class _Failure(Exception):
    def __init__(self, status: str, stage: str, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.error = StageError(stage, status, message, trace)


def _candidate_call(model: Callable[..., Any], inputs: dict[str, Any], device: str, stage: str) -> Any:
    try:
        with torch.no_grad():
            out = model(**inputs)
        _sync(device)
        return out
    except Exception as exc:  # the candidate's error is data
        status = "cuda_error" if _is_cuda_fatal(exc) else "runtime_error"
        raise _Failure(status, stage, f"{type(exc).__name__}: {str(exc).strip()[:500]}", _trace(exc)) from None


def _problem_call(fn: Callable[[], Any], stage: str) -> Any:
    try:
        return fn()
    except AkaError as exc:
        raise _Failure("problem_error", stage, str(exc)) from None
    except Exception as exc:
        raise _Failure("problem_error", stage, f"{type(exc).__name__} in the problem's {stage}: {exc}",
                       _trace(exc)) from None


def _build_models(ctx: WorkerContext, shape: Shape) -> tuple[torch.nn.Module, Any]:
    device = ctx.device
    ref_model = _problem_call(lambda: ctx.ref_module.Model(**shape.init_kwargs).to(device).eval(), "reference init")
    if ctx.kind == "eager":
        return ref_model, ref_model
    if ctx.kind == "compile":
        return ref_model, torch.compile(ref_model, dynamic=False)
    try:
        cand = ctx.candidate_model_cls(**shape.init_kwargs)
        if isinstance(cand, torch.nn.Module):
            cand = cand.to(device).eval()
            state = ref_model.state_dict()
            if state:
                cand.load_state_dict(state)
    except Exception as exc:
        raise _Failure("runtime_error", "init", f"Model(**init_kwargs) raised {type(exc).__name__}: {exc}",
                       _trace(exc)) from None
    return ref_model, cand


def _roofline_entry(ctx: WorkerContext, shape: Shape) -> dict[str, Any]:
    cached = ctx.problem.roofline.get(shape.shape_id)
    if cached is not None:
        return cached.to_json()
    seed = derive_seed(ctx.problem.name, shape.shape_id, 0, "roofline")
    entry = _problem_call(lambda: measure_entry(
        ctx.problem, shape, ctx.ref_module,
        lambda: make_inputs(ctx.problem, ctx.input_module, shape, ctx.device, seed),
        lambda: ctx.ref_module.Model(**shape.init_kwargs).to(ctx.device).eval()), "roofline")
    return entry.to_json() | {"computed_now": True}


def _check_correctness(ctx: WorkerContext, shape: Shape, ref_model: torch.nn.Module, cand: Any,
                       use_fp64: bool) -> tuple[list[int], float, float]:
    problem, device = ctx.problem, ctx.device
    seeds: list[int] = []
    worst_abs = worst_rel = 0.0
    ref_exact_model = None
    if use_fp64:
        ref_exact_model = _problem_call(
            lambda: ctx.ref_module.Model(**shape.init_kwargs).to(device).double().eval(), "reference init")
    for case in range(int(ctx.job.get("cases", 3))):
        seed = derive_seed(problem.name, shape.shape_id, case)
        seeds.append(seed)
        inputs = _problem_call(lambda: make_inputs(problem, ctx.input_module, shape, device, seed), "inputs")
        ref_inputs = clone_inputs(inputs)
        with torch.no_grad():
            ref_native = _problem_call(lambda: ref_model(**ref_inputs), "reference")
            ref_exact = ref_native
            if ref_exact_model is not None:
                exact_inputs = upcast_inputs(clone_inputs(inputs))
                ref_exact = _problem_call(lambda: ref_exact_model(**exact_inputs), "reference")
        cand_inputs = clone_inputs(inputs)
        out = _candidate_call(cand, cand_inputs, device, "correctness")
        comparison = compare_outputs(out, ref_native, ref_exact, problem.tolerance_for, problem.max_mismatch_fraction)
        if not comparison.ok:
            raise _Failure("wrong_output", "correctness", f"case {case} (seed {seed}): {comparison.reason}")
        for name, value in inputs.items():
            if name in problem.mutates_inputs or not isinstance(value, torch.Tensor):
                continue
            if not torch.equal(cand_inputs[name], value):
                raise _Failure("wrong_output", "correctness",
                               f"case {case} (seed {seed}): input `{name}` was modified, but the reference treats it as read-only")
        worst_abs = max(worst_abs, comparison.max_abs_error or 0.0)
        worst_rel = max(worst_rel, comparison.max_rel_error or 0.0)
    return seeds, worst_abs, worst_rel


def _audit(ctx: WorkerContext, shape: Shape, cand: Any, seed: int) -> AuditReport:
    if ctx.kind != "file":
        return AuditReport(real=False, method="baseline", reason=f"PyTorch reference ({ctx.kind} baseline)")
    inputs = make_inputs(ctx.problem, ctx.input_module, shape, ctx.device, seed)
    audit = AtenAuditMode()
    with ctx.recorder.recording(audit):
        with audit:
            _candidate_call(cand, inputs, ctx.device, "audit")
    return build_report(audit, ctx.recorder.launches, ctx.candidate_module_name)


def _input_sets(ctx: WorkerContext, shape: Shape) -> list[dict[str, Any]]:
    count = int(ctx.job.get("input_sets", 3))
    sets = []
    for i in range(count):
        seed = derive_seed(ctx.problem.name, shape.shape_id, i, "timing")
        sets.append(make_inputs(ctx.problem, ctx.input_module, shape, ctx.device, seed))
        if i == 0 and ctx.device.startswith("cuda"):
            size = sum(t.numel() * t.element_size() for t in sets[0].values() if isinstance(t, torch.Tensor))
            free, _ = torch.cuda.mem_get_info()
            if size * count > free // 4:
                break  # keep memory for the candidate: fewer rotating sets for huge shapes
    return sets


def _time(ctx: WorkerContext, model: Any, input_sets: list[dict[str, Any]]) -> TimingStats:
    def call(inputs: dict[str, Any]) -> Any:
        with torch.no_grad():
            return model(**inputs)

    try:
        if ctx.device.startswith("cuda"):
            return time_cuda(call, input_sets, ctx.timers, int(ctx.job["l2_bytes"]))
        return time_cpu(call, input_sets, ctx.timers, reps=int(ctx.job.get("cpu_reps", 3)))
    except Exception as exc:
        status = "cuda_error" if _is_cuda_fatal(exc) else "runtime_error"
        raise _Failure(status, "timing", f"{type(exc).__name__}: {str(exc)[:500]}", _trace(exc)) from None


def evaluate_shape(ctx: WorkerContext, shape: Shape) -> ShapeResult:
    """All stages for one shape; a failure at any stage ends the shape with its verdict."""
    seeds: list[int] = []
    roofline: dict[str, Any] | None = None
    precision = None
    try:
        roofline = _roofline_entry(ctx, shape)
        ref_model, cand = _build_models(ctx, shape)
        use_fp64 = ctx.problem.fp64_reference and roofline["flops"] <= float(ctx.job.get("fp64_flop_limit", 5e11))
        precision = "float64" if use_fp64 else "native"
        seeds, max_abs, max_rel = _check_correctness(ctx, shape, ref_model, cand, use_fp64)
        tampered = ctx.timers.tampered()
        if tampered:
            raise _Failure("tampered", "correctness", "timer entry points were replaced: " + ", ".join(tampered))
        audit = _audit(ctx, shape, cand, seeds[0])
        timing = eager = compiled = None
        if ctx.job.get("timing", True):
            sets = _problem_call(lambda: _input_sets(ctx, shape), "inputs")
            timing = _time(ctx, cand, sets)
            if ctx.job.get("compare_eager") and ctx.kind != "eager":
                eager = _time(ctx, ref_model, sets)
            if ctx.job.get("compare_compile") and ctx.kind != "compile":
                eager_compiled = torch.compile(ref_model, dynamic=False)
                compiled = _time(ctx, eager_compiled, sets)
            tampered = ctx.timers.tampered()
            if tampered:
                raise _Failure("tampered", "timing", "timer entry points were replaced: " + ", ".join(tampered))
        return ShapeResult(shape.shape_id, PASSED, seeds, None, precision, max_abs, max_rel, timing, audit,
                           roofline, eager, compiled)
    except _Failure as failure:
        return ShapeResult(shape.shape_id, failure.error.kind, seeds, failure.error, precision, roofline=roofline)


def _compile_candidate(job: dict[str, Any]) -> tuple[Any, str]:
    path = job["candidate"]["path"]
    from pathlib import Path

    module = import_file(Path(path), "cand")
    model_cls = getattr(module, "Model", None)
    if model_cls is None:
        raise _Failure("compile_error", "compile", f"{path} does not define class Model")
    return model_cls, module.__name__


def run(job: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    """Evaluate the job's shapes in order, emitting one message per event; returns the exit code."""
    timers = Timers.capture()
    recorder = TritonLaunchRecorder()
    recorder.install()
    try:
        problem = load_problem(job["problem_dir"])
        ref_module = import_file(problem.reference_path, "ref")
        input_module = import_file(problem.input_path, "inp")
    except Exception as exc:
        emit({"event": "compiled", "ok": False, "error": asdict(StageError(
            "compile", "problem_error", f"problem {job['problem_dir']} cannot be loaded: {exc}", _trace(exc)))})
        return 0
    if job["device"].startswith("cuda") and torch.device(job["device"]).index is not None:
        torch.cuda.set_device(torch.device(job["device"]))
    model_cls, module_name = ref_module.Model, ref_module.__name__
    if job["candidate"]["kind"] == "file":
        try:
            model_cls, module_name = _compile_candidate(job)
        except _Failure as failure:
            emit({"event": "compiled", "ok": False, "error": asdict(failure.error)})
            return 0
        except BaseException as exc:  # SyntaxError, ImportError, SystemExit at import time...
            emit({"event": "compiled", "ok": False, "error": asdict(StageError(
                "compile", "compile_error", f"{type(exc).__name__}: {str(exc)[:500]}", _trace(exc)))})
            return 0
    launch_ms = None
    if job["device"].startswith("cuda"):
        from aka_tui.bench.empty_kernel import measure_empty_launch_ms

        launch_ms = measure_empty_launch_ms(timers, int(job["l2_bytes"]))
    emit({"event": "compiled", "ok": True, "empty_launch_ms": launch_ms})
    ctx = WorkerContext(job, problem, ref_module, input_module, model_cls, module_name, timers, recorder)
    for shape_id in job["shape_ids"]:
        emit({"event": "shape_start", "shape_id": shape_id})
        result = evaluate_shape(ctx, problem.shapes[shape_id])
        emit({"event": "shape_result", "result": asdict(result)})
        if result.status == "cuda_error":
            return EXIT_RESTART
    emit({"event": "done"})
    return 0
