"""Inside the worker process: set up the harness, compile the candidate, then measure each shape with the
engine (`aka_tui.bench.measure`) and report it over the authenticated channel.

Every failure of the candidate becomes a ShapeResult; the parent (`isolation.py`) handles crashes and
hangs that kill or stall this process, and checks what it can itself (`measure/parent_check.py`).
"""

from __future__ import annotations

import gc
import importlib
import io
import re
import time
import tokenize
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import torch

from aka_tui.bench.evaluator.worker_entry import EXIT_PRELOAD, EXIT_RESTART, STARTUP_PHASES
from aka_tui.bench.measure import poison
from aka_tui.bench.measure.audit import TritonLaunchRecorder, audit_mode
from aka_tui.bench.measure.calls import MeasureFailure
from aka_tui.bench.measure.integrity import CompilerImportedLate, IntegritySnapshot, ThreadStartCounter
from aka_tui.bench.measure.job import COMPILE_MODES, MeasureJob
from aka_tui.bench.measure.results import ShapeResult, StageError
from aka_tui.bench.measure.samples import timed_sampler
from aka_tui.bench.measure.session import Session, measure_baselines, measure_shape
from aka_tui.bench.measure.timed_checks import input_checksums
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.fuzz import is_fuzz_id, resolve_shape
from aka_tui.bench.problem.inputs import clone_inputs, make_inputs
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.settled_order import import_reference
from aka_tui.bench.problem.tolerance import compare_outputs


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


# A candidate source that names the compiler (inductor's runtime helpers import dynamo too)
_NAMES_COMPILER = re.compile(r"\b(_dynamo|_inductor|torch\s*\.\s*compile|torch\s*\.\s*export)\b")
# tokens that are not code: comments and strings (f-strings are split into parts from Python 3.12)
_NOT_CODE = {tokenize.COMMENT, tokenize.STRING} | {getattr(tokenize, name) for name in
                                                   ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                                                   if hasattr(tokenize, name)}


def names_compiler(source: str) -> bool:
    """Whether the source's code (not its comments or strings) names torch's compiler. Only a hint that saves
    a re-run: a candidate that loads the compiler some other way (a name built in a string) is re-run with it
    loaded up front (`CompilerImportedLate`). Comments and docstrings that mention torch.compile are common in
    kernels and would cost every evaluation's worker 1.5-2 s on the CPU."""
    try:
        code = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in _NOT_CODE]
    except (tokenize.TokenError, SyntaxError):
        return bool(_NAMES_COMPILER.search(source))
    return bool(_NAMES_COMPILER.search(" ".join(code)))


def dynamo_up_front(job: MeasureJob) -> bool:
    """Import torch._dynamo before the integrity snapshot? Importing it rewraps `torch.manual_seed` and friends,
    which would read as tampering if the candidate did it, but it costs 1.5-2 s of every worker's start. Only a
    hardened file candidate's integrity is checked: on a GPU (where the profiler loads it) and when its source
    names the compiler, it is loaded up front; a CPU candidate that loads it all the same is re-run with it
    (`CompilerImportedLate`, `preload_dynamo`)."""
    if job.preload_dynamo or job.candidate.kind in COMPILE_MODES:
        return True
    if not (job.candidate.is_file and job.hardening and job.candidate.path):
        return False
    if job.device.startswith("cuda"):
        return True  # the profiled calls (torch.profiler) load it for every hardened file candidate there
    try:
        return names_compiler(Path(job.candidate.path).read_text(errors="replace"))
    except OSError:
        return False


def _warm_up_harness(problem: Problem, ref_module: Any, input_module: Any, job: MeasureJob) -> None:
    """Run the harness's own paths once so functions torch rewraps lazily (e.g. on first call) settle
    before the integrity snapshot; failures here surface later as problem errors."""
    if dynamo_up_front(job):
        importlib.import_module("torch._dynamo")  # importing it rewraps torch.manual_seed and friends
    shape = resolve_shape(problem, job.shape_ids[0]) if job.shape_ids else None
    if shape is None:
        return
    try:
        inputs = make_inputs(problem, input_module, shape, job.device, 0)
        with torch.no_grad():
            out = ref_module.Model(**shape.init_kwargs).to(job.device).eval()(**clone_inputs(inputs))
        with poison.poisoned_allocations(job.device):
            torch.empty(1, device=job.device)
        with audit_mode():  # a torch whose dispatch modes load dynamo regardless loads it here, before the snapshot
            clone_inputs(inputs)
        compare_outputs(out, out, out, problem.tolerance_for, 0.0)
        timed_sampler(out, 0, 0).take(out)
        input_checksums(inputs, [])
        if job.device.startswith("cuda"):
            torch.cuda.synchronize()
    except Exception:
        pass


def _compile_candidate(job: MeasureJob) -> tuple[Any, str]:
    path = str(job.candidate.path)
    module = import_file(Path(path), "cand")
    model_cls = getattr(module, "Model", None)
    if model_cls is None:
        raise MeasureFailure("compile_error", "compile", f"{path} does not define class Model")
    return model_cls, module.__name__


def _compile_error(exc: BaseException) -> dict[str, Any]:
    return asdict(StageError("compile", "compile_error", f"{type(exc).__name__}: {str(exc)[:500]}", _trace(exc)))


def run(job_data: dict[str, Any], emit: Callable[[dict[str, Any]], None],
        startup: dict[str, float] | None = None) -> int:
    """Evaluate the job's shapes in order, emitting one message per event; returns the exit code. `startup`:
    seconds of the start so far (worker_entry's), completed here with the harness's own phases and sent with
    `compiled` (STARTUP_PHASES: the problem's modules, the device context with the empty-launch measurement, the
    harness's warm-up, the candidate's import and compile)."""
    startup = dict(startup or {})
    mark = time.time()

    def phase(name: str) -> None:
        nonlocal mark
        assert name in STARTUP_PHASES, name  # the parent keeps only these
        now = time.time()
        startup[name] = round(now - mark, 3)
        mark = now

    job = MeasureJob.from_json(job_data)
    timers = Timers.capture()
    recorder = TritonLaunchRecorder()
    recorder.install()
    try:
        problem = load_problem(job.problem_dir)
        ref_module = import_reference(problem.reference_path, "ref")
        input_module = import_file(problem.input_path, "inp")
    except Exception as exc:
        emit({"event": "compiled", "ok": False, "error": asdict(StageError(
            "compile", "problem_error", f"problem {job.problem_dir} cannot be loaded: {exc}", _trace(exc)))})
        return 0
    phase("problem")
    if job.device.startswith("cuda") and torch.device(job.device).index is not None:
        torch.cuda.set_device(torch.device(job.device))
    launch_ms = None
    if job.device.startswith("cuda") and job.candidate.kind != "baselines":
        from aka_tui.bench.roofline.empty_kernel import measure_empty_launch_ms  # defines a Triton kernel: CUDA only

        launch_ms = measure_empty_launch_ms(timers, job.l2_bytes)
    phase("device")
    _warm_up_harness(problem, ref_module, input_module, job)
    phase("harness")
    thread_starts = ThreadStartCounter()
    snapshot = IntegritySnapshot()  # after our own patches and lazy rewraps, before the candidate's code runs
    model_cls, module_name = ref_module.Model, ref_module.__name__
    if job.candidate.is_file:
        try:
            model_cls, module_name = _compile_candidate(job)
        except MeasureFailure as failure:
            emit({"event": "compiled", "ok": False, "error": asdict(failure.error)})
            return 0
        except BaseException as exc:  # SyntaxError, ImportError, SystemExit at import time...
            emit({"event": "compiled", "ok": False, "error": _compile_error(exc)})
            return 0
        if job.hardening and snapshot.dynamo_arrived():
            return EXIT_PRELOAD
    phase("candidate")
    emit({"event": "compiled", "ok": True, "empty_launch_ms": launch_ms, "startup_s": startup})
    session = Session(job, problem, ref_module, input_module, model_cls, module_name, timers, recorder, snapshot,
                      thread_starts)
    return _measure_shapes(session, emit)


RELEASE_ABOVE_BYTES = 2 << 30


def release_device_memory(device: str) -> None:
    """Between shapes: anything the last shape left in reference cycles goes now, and the allocator's cached
    blocks go back to the GPU, so the next shape's reference has the whole device (a published fp8 MoE
    reference reserves ~130 GiB of an H200's 140). A guard: on the eager path the H200 measurement found nothing
    left allocated after a shape (BENCHMARKS.md, session 16). Only on a GPU holding more than
    RELEASE_ABOVE_BYTES (a collection costs ~0.1 s)."""
    if device.startswith("cuda") and torch.cuda.memory_reserved() > RELEASE_ABOVE_BYTES:
        gc.collect()
        torch.cuda.empty_cache()


def _measure_shapes(session: Session, emit: Callable[[dict[str, Any]], None]) -> int:
    job = session.job
    fuzz_ids = set(job.fuzz_shape_ids)
    for shape_id in job.shape_ids:
        emit({"event": "shape_start", "shape_id": shape_id})
        shape = resolve_shape(session.problem, shape_id)
        evidence: list[dict[str, Any]] = []
        if shape is None:
            result = ShapeResult(shape_id, "problem_error", [], StageError("inputs", "problem_error",
                                                                           f"unknown shape {shape_id}"))
        elif job.candidate.kind == "baselines":
            result = measure_baselines(session, shape)
        else:
            try:
                result, evidence = measure_shape(session, shape, fuzz=shape_id in fuzz_ids or is_fuzz_id(shape_id))
            except CompilerImportedLate:
                return EXIT_PRELOAD
        emit({"event": "shape_result", "result": asdict(result), "evidence": evidence})
        if result.status == "cuda_error":
            return EXIT_RESTART
        release_device_memory(session.device)
    emit({"event": "done"})
    return 0
