"""`aka trace record`: run the serving-style workload mix over the suite's references under torch.profiler."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from aka_tui.errors import TraceError

if TYPE_CHECKING:
    from aka_tui.bench.problem.model import Problem, Suite

DEFAULT_WORKLOAD = Path(__file__).with_name("workload.json")


@dataclass(frozen=True)
class RecordOptions:
    """What to record and where."""

    out: Path
    device: str = "cpu"
    steps: int = 8
    smoke: bool = False  # smoke-tier shapes (seconds on a CPU); implied on the CPU
    suite_dir: Path | None = None
    workload: Path = DEFAULT_WORKLOAD
    warmup_steps: int = 1  # unprofiled rounds of one prefill and one decode step
    budget_s: float | None = None  # stop recording steps after this many seconds (the trace keeps what ran)
    seed: int = 0


@dataclass
class _Call:
    layer: str
    op: str
    shape_id: str
    model: Any = None
    inputs: dict[str, Any] = field(default_factory=dict)


def load_workload(path: Path) -> dict[str, Any]:
    """The workload mix file (see docs/trace.md)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
        raise TraceError(f"cannot read workload {path}: {exc}") from None
    phases = data.get("phases") if isinstance(data, dict) else None
    if not isinstance(phases, dict) or not {"prefill", "decode"} <= set(phases):
        raise TraceError(f"workload {path} needs `phases` with `prefill` and `decode` call lists")
    return data


def step_phases(steps: int, decode_per_prefill: int) -> list[str]:
    """Step i is a prefill step every `decode_per_prefill + 1` steps, starting with one."""
    return ["prefill" if i % (decode_per_prefill + 1) == 0 else "decode" for i in range(steps)]


def _resolve_shape(problem: Any, spec: dict[str, Any], phase: str, smoke: bool) -> str:
    if not smoke:
        return str(spec["full"])
    if spec.get("smoke"):
        return str(spec["smoke"])
    smoke_ids = [s.shape_id for s in problem.shapes_for("smoke")]
    if not smoke_ids:
        raise TraceError(f"{problem.name} has no smoke shape for --smoke")
    return smoke_ids[-1] if phase == "prefill" else smoke_ids[0]


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def record(options: RecordOptions, log: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """Record the workload; writes a gzipped Chrome trace with `aka_workload` metadata, returns that metadata."""
    from torch.profiler import ProfilerActivity, profile

    from aka_tui.bench.problem.lookup import default_suite_dir, load_suite

    device = options.device
    _check_options(options)
    smoke = options.smoke or device == "cpu"
    workload = load_workload(options.workload)
    suite = load_suite(options.suite_dir or default_suite_dir())
    decode_per_prefill = int(workload.get("decode_per_prefill", 3))
    phases = step_phases(options.steps, decode_per_prefill)
    calls, failures, built = _build_calls(workload, suite, options, smoke)
    log(f"built {built} (op, shape) calls on {device} ({'smoke' if smoke else 'full'} tier)"
        + (f"; {len(failures)} skipped" if failures else ""))

    started = time.monotonic()
    for _ in range(options.warmup_steps):  # every call once per phase: lazy init and autotuning stay out of the trace
        for phase in ("prefill", "decode"):
            _run_step(calls[phase], failures, device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    done: list[str] = []
    with profile(activities=activities, record_shapes=True) as prof:
        for phase in phases:
            if options.budget_s is not None and done and time.monotonic() - started > options.budget_s:
                log(f"budget of {options.budget_s:.0f} s reached after {len(done)} steps")
                break
            _run_step(calls[phase], failures, device)
            done.append(phase)
        meta = _metadata(options, workload, smoke, decode_per_prefill, done, calls, failures)
        prof.add_metadata_json("aka_workload", json.dumps(meta))
    _write_trace(prof, Path(options.out))
    log(f"recorded {len(done)} steps ({meta['prefill_steps']} prefill, {meta['decode_steps']} decode) in "
        f"{time.monotonic() - started:.1f} s")
    return meta


def _check_options(options: RecordOptions) -> None:
    device = options.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise TraceError(f"--device {device} needs a CUDA GPU; use --device cpu (smoke shapes)")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise TraceError(f"unknown device {device!r}: use cpu or cuda[:N]")
    if options.steps < 1:
        raise TraceError("--steps must be at least 1")


def _build_calls(workload: dict[str, Any], suite: Suite, options: RecordOptions,
                 smoke: bool) -> tuple[dict[str, list[_Call]], dict[str, str], int]:
    """Every (op, shape) of the workload built once, outside the profiled region: the calls of each phase, the
    ops that could not be built (by `op:shape`, with why) and how many distinct calls were built."""
    calls: dict[str, list[_Call]] = {}
    cache: dict[tuple[str, str], _Call] = {}
    failures: dict[str, str] = {}
    modules: dict[str, tuple[Any, Any]] = {}
    for phase in ("prefill", "decode"):
        calls[phase] = []
        for spec in workload["phases"][phase]:
            op = str(spec["op"])
            problem = suite.problems.get(op)
            if problem is None:
                failures[f"{op}:?"] = "not in the suite"
                continue
            shape_id = _resolve_shape(problem, spec, phase, smoke)
            key = (op, shape_id)
            if key not in cache:
                if shape_id not in problem.shapes:
                    raise TraceError(f"workload {options.workload}: {op} has no shape {shape_id!r}")
                try:
                    model, inputs = _build_call(op, problem, shape_id, modules, options)
                except Exception as exc:  # an op that cannot be built is skipped and reported, not fatal
                    failures[f"{op}:{shape_id}"] = f"setup: {type(exc).__name__}: {str(exc)[:200]}"
                    continue
                cache[key] = _Call(str(spec.get("layer", "")), op, shape_id, model, inputs)
            calls[phase].append(cache[key])
    return calls, failures, len(cache)


def _build_call(op: str, problem: Problem, shape_id: str, modules: dict[str, tuple[Any, Any]],
                options: RecordOptions) -> tuple[Any, dict[str, Any]]:
    """The reference model of one (op, shape) on the device and its inputs (the op's modules imported once)."""
    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.module_loading import import_file

    if op not in modules:
        modules[op] = (import_file(problem.reference_path, "ref"), import_file(problem.input_path, "inp"))
    ref, inp = modules[op]
    shape = problem.shapes[shape_id]
    model = ref.Model(**shape.init_kwargs).to(options.device).eval()
    return model, make_inputs(problem, inp, shape, options.device, options.seed)


def _run_step(calls: list[_Call], failures: dict[str, str], device: str) -> None:
    """One step: every call of its phase, each in an `aka:<op>:<shape>` range; a call that fails is dropped."""
    from torch.profiler import record_function

    for call in calls:
        if f"{call.op}:{call.shape_id}" in failures:
            continue
        try:
            with record_function(f"aka:{call.op}:{call.shape_id}"), torch.no_grad():
                call.model(**call.inputs)
        except Exception as exc:
            failures[f"{call.op}:{call.shape_id}"] = f"run: {type(exc).__name__}: {str(exc)[:200]}"
    _sync(device)


def _metadata(options: RecordOptions, workload: dict[str, Any], smoke: bool, decode_per_prefill: int,
              done: list[str], calls: dict[str, list[_Call]], failures: dict[str, str]) -> dict[str, Any]:
    """The trace's `aka_workload` metadata: what was recorded, on what, and what failed."""
    device = options.device
    return {
        "name": workload.get("name", Path(options.workload).stem), "workload_file": str(options.workload),
        "device": device, "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "tier": "smoke" if smoke else "full", "steps": len(done), "steps_requested": options.steps,
        "prefill_steps": done.count("prefill"), "decode_steps": done.count("decode"),
        "decode_per_prefill": decode_per_prefill, "warmup_steps": options.warmup_steps, "seed": options.seed,
        "step_phases": done,
        "calls": {phase: [f"{c.layer}/{c.op}:{c.shape_id}" for c in calls[phase]] for phase in calls},
        "failures": failures, "torch": torch.__version__,
        "time_source": "gpu" if device.startswith("cuda") else "cpu",
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _write_trace(prof: Any, out: Path) -> None:
    """The profiler's Chrome trace at `out`, gzipped when its name ends in .gz."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".json", dir=out.parent)
    os.close(fd)
    try:
        prof.export_chrome_trace(tmp)
        raw = Path(tmp).read_bytes()
    finally:
        Path(tmp).unlink(missing_ok=True)
    out.write_bytes(gzip.compress(raw, compresslevel=6) if out.suffix == ".gz" else raw)
