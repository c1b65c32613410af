"""Inside the worker process: compile → per shape: correctness → audit → timing → recheck.

Every failure of the candidate becomes a ShapeResult; the parent (`isolation.py`) handles crashes and
hangs that kill or stall this process.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

import torch

from aka_tui.bench import attribution, poison
from aka_tui.bench.audit import AtenAuditMode, TritonLaunchRecorder, build_report
from aka_tui.bench.fuzz import is_fuzz_id, resolve_shape
from aka_tui.bench.inputs import clone_inputs, make_inputs, timing_input_sets, upcast_inputs
from aka_tui.bench.integrity import IntegritySnapshot, ThreadStartCounter, new_threads, thread_census
from aka_tui.bench.module_loading import import_file
from aka_tui.bench.problem import Problem, Shape, load_problem
from aka_tui.bench.results import PASSED, AuditReport, ShapeResult, StageError, TimingStats
from aka_tui.bench.roofline import measure_entry
from aka_tui.bench.seeds import derive_seed
from aka_tui.bench.worker_entry import EXIT_RESTART
from aka_tui.bench.timing import Timers, escaped_work, time_cpu, time_cuda
from aka_tui.bench.tolerance import compare_outputs, naive_allclose
from aka_tui.errors import AkaError

CUDA_FATAL_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure",
                      "misaligned address", "illegal instruction", "CUDA error: an illegal")


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
    snapshot: IntegritySnapshot
    thread_starts: ThreadStartCounter

    @property
    def device(self) -> str:
        return str(self.job["device"])

    @property
    def kind(self) -> str:
        return str(self.job["candidate"]["kind"])

    @property
    def is_file(self) -> bool:
        return self.kind == "file"

    @property
    def hardened(self) -> bool:
        """False only for the naive check of the correctness-illusion report (and hardening-cost runs)."""
        return bool(self.job.get("hardening", True))

    def replay_hint(self, shape_id: str, seed: int) -> str:
        cand = self.job["candidate"].get("path") or self.kind
        return f"replay: aka eval {cand} --problem {self.problem.directory} --shape '{shape_id}' --replay-seed {seed}"


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _is_cuda_fatal(exc: BaseException) -> bool:
    text = str(exc)
    return any(marker in text for marker in CUDA_FATAL_MARKERS)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


class _Float64Unavailable(Exception):
    """The reference does not run on float64 inputs: the native reference is the yardstick instead."""


FLOAT64_MEMORY_SHARE = 0.25  # of the device's free memory the float64 copies of the inputs may take
FLOAT64_CPU_LIMIT_BYTES = 4 << 30


def _check_float64_room(inputs: dict[str, Any], device: str) -> None:
    """The float64 reference would not fit beside everything else: the native run is the yardstick."""
    needed = sum(t.numel() * 8 for t in inputs.values() if isinstance(t, torch.Tensor) and t.is_floating_point())
    limit = (torch.cuda.mem_get_info()[0] * FLOAT64_MEMORY_SHARE if device.startswith("cuda")
             else FLOAT64_CPU_LIMIT_BYTES)
    if needed > limit:
        raise _Float64Unavailable(f"its float64 inputs would take {needed / 2**30:.1f} GiB, "
                                  f"over {limit / 2**30:.1f} GiB")


class _Failure(Exception):
    def __init__(self, status: str, stage: str, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.error = StageError(stage, status, message, trace)


def _check_integrity(ctx: WorkerContext, stage: str) -> None:
    if not ctx.hardened:
        return
    changed = ctx.snapshot.changed()
    if changed:
        shown = ", ".join(changed[:8]) + (f" (+{len(changed) - 8} more)" if len(changed) > 8 else "")
        raise _Failure("tampered", stage, f"functions the harness relies on were replaced: {shown}")


def _candidate_call(ctx: WorkerContext, model: Callable[..., Any], inputs: dict[str, Any], stage: str) -> Any:
    """One forward of the candidate; errors are verdicts; threads left running are tampering."""
    before = thread_census()
    mark = ctx.thread_starts.mark()
    try:
        with torch.no_grad():
            out = model(**inputs)
        _sync(ctx.device)
    except Exception as exc:  # the candidate's error is data
        status = "cuda_error" if _is_cuda_fatal(exc) else "runtime_error"
        raise _Failure(status, stage, f"{type(exc).__name__}: {str(exc).strip()[:500]}", _trace(exc)) from None
    if ctx.is_file and ctx.hardened:
        left = new_threads(before)
        started = ctx.thread_starts.since(mark)
        if left or started:
            raise _Failure("tampered", stage, "forward ran work in other thread(s): " + ", ".join(sorted(set(left + started))))
    return out


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


def _case_seeds(ctx: WorkerContext, shape: Shape) -> list[int]:
    if ctx.job.get("seeds"):
        return [int(s) for s in ctx.job["seeds"]]
    return [derive_seed(ctx.problem.name, shape.shape_id, case) for case in range(int(ctx.job.get("cases", 3)))]


def _compare_case(ctx: WorkerContext, shape: Shape, ref_model: torch.nn.Module, ref_exact_model: Any,
                  cand: Any, seed: int, stage: str) -> tuple[float, float]:
    """Build the seeded inputs, run reference and candidate (poisoned allocations), compare."""
    problem, device = ctx.problem, ctx.device
    inputs = _problem_call(lambda: make_inputs(problem, ctx.input_module, shape, device, seed), "inputs")
    ref_inputs = clone_inputs(inputs)
    with torch.no_grad():
        ref_native = _problem_call(lambda: ref_model(**ref_inputs), "reference")
        ref_exact = ref_native
        if ref_exact_model is not None:
            _check_float64_room(inputs, device)
            exact_inputs = upcast_inputs(clone_inputs(inputs))
            try:
                ref_exact = ref_exact_model(**exact_inputs)
            except Exception as exc:  # e.g. a reference that allocates float32 buffers itself
                raise _Float64Unavailable(f"{type(exc).__name__}: {str(exc)[:160]}") from None
    cand_inputs = clone_inputs(inputs)
    if not ctx.hardened:
        out = _candidate_call(ctx, cand, cand_inputs, stage)
        naive = naive_allclose(out, ref_native)
        if not naive.ok:
            raise _Failure("wrong_output", stage, f"seed {seed} (naive allclose): {naive.reason}")
        return naive.max_abs_error or 0.0, 0.0
    if ctx.kind == "eager":  # the baseline is the reference itself: its native run is the output checked
        out, cand_inputs = ref_native, ref_inputs
    else:
        with poison.poisoned_allocations(device):
            out = _candidate_call(ctx, cand, cand_inputs, stage)
    comparison = compare_outputs(out, ref_native, ref_exact, problem.tolerance_for, problem.max_mismatch_fraction)
    where = f"seed {seed}"
    if not comparison.ok:
        raise _Failure("wrong_output", stage, f"{where}: {comparison.reason}; {ctx.replay_hint(shape.shape_id, seed)}")
    for name, value in inputs.items():
        if name in problem.mutates_inputs or not isinstance(value, torch.Tensor):
            continue
        if not torch.equal(cand_inputs[name], value):
            raise _Failure("wrong_output", stage,
                           f"{where}: input `{name}` was modified, but the reference treats it as read-only")
    return comparison.max_abs_error or 0.0, comparison.max_rel_error or 0.0


def _exact_model(ctx: WorkerContext, shape: Shape, use_fp64: bool) -> Any:
    if not use_fp64:
        return None
    return _problem_call(
        lambda: ctx.ref_module.Model(**shape.init_kwargs).to(ctx.device).double().eval(), "reference init")


def _audit(ctx: WorkerContext, shape: Shape, ref_model: torch.nn.Module, cand: Any) -> AuditReport:
    """Audited forward on inputs of its own seed; its output is checked too (no reuse of a checked case)."""
    if not ctx.is_file:
        return AuditReport(real=False, method="baseline", reason=f"PyTorch reference ({ctx.kind} baseline)")
    if not ctx.hardened:
        return AuditReport(real=False, method="none", reason="naive check: no attribution")
    seed = derive_seed(ctx.problem.name, shape.shape_id, 0, "audit")
    inputs = _problem_call(lambda: make_inputs(ctx.problem, ctx.input_module, shape, ctx.device, seed), "inputs")
    with torch.no_grad():
        expected = _problem_call(lambda: ref_model(**clone_inputs(inputs)), "reference")
    audit = AtenAuditMode()
    with ctx.recorder.recording(audit):
        with audit:
            out = _candidate_call(ctx, cand, inputs, "audit")
    comparison = compare_outputs(out, expected, expected, ctx.problem.tolerance_for, ctx.problem.max_mismatch_fraction)
    if not comparison.ok:
        raise _Failure("wrong_output", "audit", f"seed {seed} (audit run): {comparison.reason}")
    report = build_report(audit, ctx.recorder.launches, ctx.candidate_module_name)
    if not ctx.device.startswith("cuda"):
        return report
    return _attribute_on_gpu(ctx, shape, cand, seed, report)


def _attribute_on_gpu(ctx: WorkerContext, shape: Shape, cand: Any, seed: int, report: AuditReport) -> AuditReport:
    """On CUDA the verdict is device time: own kernels ran and own_share ≥ threshold (design brief §5)."""
    inputs = make_inputs(ctx.problem, ctx.input_module, shape, ctx.device, seed)
    own_names = set(report.own_kernels)
    try:
        kernels, marker_stream = attribution.profile_device_kernels(
            lambda: _candidate_call(ctx, cand, inputs, "audit"))
    except _Failure:
        raise  # a verdict from the candidate call itself, not a profiler problem
    except Exception as exc:  # the profiler is unavailable: keep the dispatch verdict, say so
        return replace(report, reason=(report.reason + "; " if report.reason else "") +
                       f"device-time attribution unavailable ({type(exc).__name__}: {exc})")
    result = attribution.attribute(kernels, own_names, marker_stream)
    if result.escaped_streams:
        raise _Failure("tampered", "audit", "the candidate's kernels ran on a stream other than the timed one")
    threshold = float(ctx.job.get("own_share_threshold", attribution.DEFAULT_OWN_SHARE_THRESHOLD))
    real, reason = result.verdict(threshold)
    if real and report.foreign_kernels:
        real, reason = False, "foreign Triton kernels: " + ", ".join(sorted(report.foreign_kernels))
    notes = [reason] if reason else []
    if report.compute_ops:
        notes.append("aten compute ops seen: " + ", ".join(f"{k}×{v}" for k, v in sorted(report.compute_ops.items())))
    return replace(report, real=real, method="profiler+dispatch", own_share=result.own_share,
                   own_device_us=result.own_kernels, foreign_device_us=result.foreign_us, reason="; ".join(notes))


def _input_sets(ctx: WorkerContext, shape: Shape) -> list[dict[str, Any]]:
    return timing_input_sets(ctx.problem, ctx.input_module, shape, ctx.device, int(ctx.job.get("input_sets", 3)))


def _time(ctx: WorkerContext, model: Any, input_sets: list[dict[str, Any]], check_threads: bool) -> TimingStats:
    def call(inputs: dict[str, Any]) -> Any:
        with torch.no_grad():
            return model(**inputs)

    before = thread_census()
    mark = ctx.thread_starts.mark()
    off_stream: dict[str, int] = {}
    try:
        if ctx.device.startswith("cuda"):
            with ctx.recorder.guarding_stream(torch.cuda.current_stream().cuda_stream):
                stats = time_cuda(call, input_sets, ctx.timers, int(ctx.job["l2_bytes"]))
            off_stream = dict(ctx.recorder.off_stream)
        else:
            stats = time_cpu(call, input_sets, ctx.timers, reps=int(ctx.job.get("cpu_reps", 3)))
    except Exception as exc:
        status = "cuda_error" if _is_cuda_fatal(exc) else "runtime_error"
        raise _Failure(status, "timing", f"{type(exc).__name__}: {str(exc)[:500]}", _trace(exc)) from None
    if check_threads and ctx.device.startswith("cuda") and off_stream:
        raise _Failure("tampered", "timing", "kernel launches on a stream other than the timed one during timing: "
                       + ", ".join(f"{k}×{v}" for k, v in sorted(off_stream.items())))
    if check_threads:
        left = sorted(set(new_threads(before) + ctx.thread_starts.since(mark)))
        if left:
            raise _Failure("tampered", "timing", "background thread(s) running after timing: " + ", ".join(left))
    if check_threads and escaped_work(stats):
        event_ms = stats.host_bound_median_ms if stats.host_bound_median_ms is not None else stats.median_ms
        raise _Failure("tampered", "timing",
                       f"device work escaped the timed stream: {stats.wall_ms_per_call:.3f} ms synchronised wall time "
                       f"per call vs {event_ms:.3f} ms by events (+{stats.flush_ms:.3f} ms flush, host-bound pass)")
    return stats


def evaluate_shape(ctx: WorkerContext, shape: Shape, fuzz: bool) -> ShapeResult:
    """All stages for one shape; a failure at any stage ends the shape with its verdict."""
    seeds: list[int] = []
    roofline: dict[str, Any] | None = None
    precision = None
    try:
        roofline = None if fuzz else _roofline_entry(ctx, shape)
        ref_model, cand = _build_models(ctx, shape)
        flops = roofline["flops"] if roofline else 0.0
        use_fp64 = ctx.hardened and ctx.problem.fp64_reference and flops <= float(ctx.job.get("fp64_flop_limit", 5e11))
        precision = "float64" if use_fp64 else "native"
        exact_model = _exact_model(ctx, shape, use_fp64)
        max_abs = max_rel = 0.0
        for seed in _case_seeds(ctx, shape):
            seeds.append(seed)
            try:
                a, r = _compare_case(ctx, shape, ref_model, exact_model, cand, seed, "correctness")
            except _Float64Unavailable as why:
                exact_model, precision = None, f"native (the float64 run failed: {why})"
                a, r = _compare_case(ctx, shape, ref_model, exact_model, cand, seed, "correctness")
            max_abs, max_rel = max(max_abs, a), max(max_rel, r)
        _check_integrity(ctx, "correctness")
        if fuzz:
            return ShapeResult(shape.shape_id, PASSED, seeds, None, precision, max_abs, max_rel, fuzz=True)
        audit = _audit(ctx, shape, ref_model, cand)
        timing = eager = compiled = None
        if ctx.job.get("timing", True):
            sets = _problem_call(lambda: _input_sets(ctx, shape), "inputs")
            timing = _time(ctx, cand, sets, check_threads=ctx.is_file and ctx.hardened)
            if ctx.job.get("compare_eager") and ctx.kind != "eager":
                eager = _time(ctx, ref_model, sets, check_threads=False)
            if ctx.job.get("compare_compile") and ctx.kind != "compile":
                compiled = _time(ctx, torch.compile(ref_model, dynamic=False), sets, check_threads=False)
            _check_integrity(ctx, "timing")
            # Outputs are rechecked after timing: a candidate must stay correct after warm-up and caching.
            if ctx.hardened:
                _compare_case(ctx, shape, ref_model, exact_model, cand, seeds[0], "recheck after timing")
        return ShapeResult(shape.shape_id, PASSED, seeds, None, precision, max_abs, max_rel, timing, audit,
                           roofline, eager, compiled)
    except _Failure as failure:
        error = failure.error
        if fuzz and error.kind == "problem_error":
            # The fuzzed combination is outside what the reference accepts: not a verdict on the candidate.
            error = replace(error, kind="skipped", message="fuzzed shape rejected by the reference: " + error.message)
        return ShapeResult(shape.shape_id, error.kind, seeds, error, precision, roofline=roofline, fuzz=fuzz)


def _warm_up_harness(problem: Problem, ref_module: Any, input_module: Any, job: dict[str, Any]) -> None:
    """Run the harness's own paths once so functions torch rewraps lazily (e.g. on first call) settle
    before the integrity snapshot; failures here surface later as problem errors."""
    shape = resolve_shape(problem, job["shape_ids"][0]) if job["shape_ids"] else None
    if shape is None:
        return
    try:
        import torch._dynamo  # noqa: F401  (importing it rewraps torch.manual_seed and friends)

        inputs = make_inputs(problem, input_module, shape, job["device"], 0)
        with torch.no_grad():
            out = ref_module.Model(**shape.init_kwargs).to(job["device"]).eval()(**clone_inputs(inputs))
        with poison.poisoned_allocations(job["device"]):
            torch.empty(1, device=job["device"])
        compare_outputs(out, out, out, problem.tolerance_for, 0.0)
        _sync(job["device"])
    except Exception:
        pass


def _compile_candidate(job: dict[str, Any]) -> tuple[Any, str]:
    path = job["candidate"]["path"]
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
    launch_ms = None
    if job["device"].startswith("cuda"):
        from aka_tui.bench.empty_kernel import measure_empty_launch_ms  # defines a Triton kernel: CUDA only

        launch_ms = measure_empty_launch_ms(timers, int(job["l2_bytes"]))
    _warm_up_harness(problem, ref_module, input_module, job)
    thread_starts = ThreadStartCounter()
    snapshot = IntegritySnapshot()  # after our own patches and lazy rewraps, before the candidate's code runs
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
    emit({"event": "compiled", "ok": True, "empty_launch_ms": launch_ms})
    ctx = WorkerContext(job, problem, ref_module, input_module, model_cls, module_name, timers, recorder, snapshot,
                        thread_starts)
    fuzz_ids = set(job.get("fuzz_shape_ids", []))
    for shape_id in job["shape_ids"]:
        emit({"event": "shape_start", "shape_id": shape_id})
        shape = resolve_shape(problem, shape_id)
        if shape is None:
            result = ShapeResult(shape_id, "problem_error", [], StageError("inputs", "problem_error",
                                                                           f"unknown shape {shape_id}"))
        else:
            result = evaluate_shape(ctx, shape, fuzz=shape_id in fuzz_ids or is_fuzz_id(shape_id))
        emit({"event": "shape_result", "result": asdict(result)})
        if result.status == "cuda_error":
            return EXIT_RESTART
    emit({"event": "done"})
    return 0
