"""`aka kb sweep`: time a KB reference kernel over its tunables at chosen shapes, next to the roofline.

A tuning aid, not a score: each configuration goes through the evaluator's measurement engine
(`aka_tui.bench.measure`): one checked case per configuration and shape (the evaluator's tolerance logic,
poisoned allocations), then the evaluator's timing protocol on the shape's cases (L2 flush, rotating input sets)
with its timed-call verification (sampled outputs, launches). No fuzzing, no attribution, no tamper checks. S
comes only from the evaluator; a trial's status is one of the engine's verdicts (or `duplicate`).

The kernel module is imported once per op (its own module object) and a configuration is applied in place:
`module.TUNABLES.clear(); module.TUNABLES.update(cfg)`. Launchers read it at call time (`cfg=TUNABLES` as a
default argument is that same dict object; `TUNABLES[...]` inside a function is a lookup at call time);
`binding_warnings` reports kernels that copy or read TUNABLES at import, where this would not reach the
launch. Every launch is recorded (kernel, scalar arguments, tensor shapes, grid, num_warps, ...): a
configuration whose launches equal those of one already timed on the shape runs the same kernels, so it is
recorded as a duplicate of it and not timed again (inert tunables cost one correctness run, no timing).

Strategies (`strategies.py`): `coordinate` (from TUNABLES, one tunable at a time: both neighbours in its SEARCH_SPACE list,
then onwards in the better direction while it keeps winning; a change is kept only when it is faster by more
than the measured spread; passes repeat until none changes anything or the budget ends) and `grid` (the full
product, a seeded sample of it when larger than the budget). Each shape is searched on its own; with several
shapes, each shape's best configuration is then timed on the other shapes (`crosscheck`) and the one with the
best weighted geometric-mean speed-up over the default is the recommended TUNABLES (`results.py`). A trial's
record and the comparison of two are in `trials.py`, the `--shapes` keywords in `shapes.py`, the TUNABLES
binding check in `binding.py`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder, signature_hash
from aka_tui.bench.measure.calls import MeasureFailure, is_cuda_fatal, run_calls
from aka_tui.bench.measure.cases import ShapeCases, case_seeds
from aka_tui.bench.measure.job import DEFAULT_CPU_REPS, DEFAULT_FP64_FLOP_LIMIT, DEFAULT_INPUT_SETS
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.results import TimingStats
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.measure.verdicts import PASSED
from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.model import Problem, RooflineEntry, Shape
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.bench.problem.settled_order import import_reference
from aka_tui.bench.roofline.bound import bound, measure_entry
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.knowledge.reference_kernels import ReferenceKernel
from aka_tui.tuning import DEFAULT_MAX_CONFIGS, STRATEGIES, SweepError, strategies
from aka_tui.tuning.binding import binding_warnings
from aka_tui.tuning.results import TrialLog
from aka_tui.tuning.shapes import select_shapes
from aka_tui.tuning.trials import (
    FAILED_STATUSES,
    MIN_GAIN,
    OK_STATUSES,
    SWEEP_VERSION,
    TIMING_FIELDS,
    Trial,
    changes,
    config_key,
)

__all__ = [  # the sweep's public names, wherever they are defined
    "FAILED_STATUSES", "MIN_GAIN", "OK_STATUSES", "SWEEP_VERSION", "CudaContextLost", "OpSweeper", "SweepError",
    "SweepOptions", "Trial", "binding_warnings", "changes", "config_key", "failed_op_record", "select_shapes",
    "sweep_op",
]


class CudaContextLost(Exception):
    """A configuration hit a fatal CUDA error: the process's context is unusable for the rest of the op."""


class _Budget(Exception):
    """No more configurations for this search (max-configs or the wall-time deadline)."""


@dataclass
class SweepOptions:
    """How one op is swept (the CLI fills it; tests use it directly)."""

    strategy: str = "coordinate"
    max_configs: int = DEFAULT_MAX_CONFIGS  # configurations run per shape (duplicates of a timed launch are free)
    seed: int = 0
    input_sets: int | None = None  # rotating timing input sets: None = as the evaluator on CUDA, 1 on CPU
    cpu_reps: int = DEFAULT_CPU_REPS
    deadline_unix: float | None = None  # no configuration starts after this time.time()
    space: dict[str, list[Any]] | None = None  # SEARCH_SPACE values replaced per tunable (narrowing; tests)
    crosscheck: bool = True

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise SweepError(f"unknown --strategy {self.strategy!r}: use {' or '.join(STRATEGIES)}")
        if not isinstance(self.max_configs, int) or self.max_configs < 1:
            raise SweepError(f"--max-configs must be a positive integer, not {self.max_configs!r}")


def _first_line(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    # Triton compile errors put the source context first and the reason last.
    core = lines[-1] if lines and type(exc).__name__ == "CompilationError" else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {core}"[:limit]


class OpSweeper:
    """Sweeps one op's reference kernel over the given shapes; `run()` returns the op's JSON record."""

    def __init__(self, problem: Problem, kernel: ReferenceKernel, shapes: list[Shape], device: str,
                 profile: HardwareProfile, timers: Timers, options: SweepOptions,
                 emit: Callable[[dict[str, Any]], None] | None = None,
                 known: list[dict[str, Any]] | None = None) -> None:
        options.validate()
        self.problem, self.kernel, self.shapes, self.device = problem, kernel, shapes, device
        self.profile, self.timers, self.options = profile, timers, options
        self.emit = emit or (lambda event: None)
        self.known = {(config_key(t["config"]), t["shape_id"]): Trial.from_json(t) for t in (known or [])}
        self.default = dict(kernel.tunables)
        self.space = {k: list(v) for k, v in kernel.search_space.items()}
        for key, values in (options.space or {}).items():
            if not values:
                raise SweepError(f"search space override for {key!r} is empty")
            self.space[key] = list(values)
        self.log = TrialLog(self.default)
        self.runs: dict[str, int] = {}  # configurations run per shape (duplicates excluded)
        self.attempts: dict[str, int] = {}
        self.timed_launches: dict[str, dict[str, int]] = {}  # shape -> launch signature -> trial index
        self.stop_reason: dict[str, str] = {}
        self.module: ModuleType | None = None
        self.warnings: list[str] = []
        self._cases: ShapeCases | None = None
        self.recorder = TritonLaunchRecorder()
        self.input_sets = options.input_sets or (DEFAULT_INPUT_SETS if device.startswith("cuda") else 1)

    # -- set-up -------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Import the reference, the input maker and the kernel (once, as this op's own module)."""
        self.ref_module = import_reference(self.problem.reference_path, "ref")
        self.input_module = import_file(self.problem.input_path, "inp")
        path = self.kernel.path
        if self.kernel.text is not None:  # a candidate's text (its file may be out of this process's sight)
            path = Path(tempfile.mkdtemp(prefix="aka-sweep-kernel-")) / self.kernel.path.name
            path.write_text(self.kernel.text)
        self.module = import_file(path, f"sweep_{self.problem.name}")
        self.warnings = binding_warnings(path.read_text(), self.module)
        if not isinstance(getattr(self.module, "TUNABLES", None), dict) or not hasattr(self.module, "Model"):
            raise SweepError(f"{self.kernel.path} defines no TUNABLES dict or no class Model")

    def apply(self, config: dict[str, Any]) -> None:
        assert self.module is not None
        tunables = self.module.TUNABLES
        tunables.clear()
        tunables.update(config)

    def _shape_cases(self, shape: Shape) -> ShapeCases:
        """The shape's cases (inputs, references) for every configuration: the first one checks, all of them time."""
        if self._cases is not None and self._cases.shape.shape_id == shape.shape_id:
            return self._cases
        self._cases = None
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
        problem, device = self.problem, self.device
        roofline = problem.roofline.get(shape.shape_id)
        if roofline is None:
            try:
                seed = derive_seed(problem.name, shape.shape_id, 0, "roofline")
                roofline = measure_entry(problem, shape, self.ref_module,
                                         lambda: make_inputs(problem, self.input_module, shape, device, seed),
                                         lambda: self.ref_module.Model(**shape.init_kwargs).to(device).eval())
                problem.roofline[shape.shape_id] = roofline  # in memory only: the sweep writes no problem file
            except Exception:
                roofline = None  # figures against the roofline are left out for this shape
        flops = roofline.flops if roofline else 0.0
        use_fp64 = problem.fp64_reference and flops <= DEFAULT_FP64_FLOP_LIMIT
        cases = ShapeCases(problem, shape, device, self.ref_module, self.input_module,
                           case_seeds(problem, shape, self.input_sets), use_fp64, 0, self.options.seed)
        cases.case(0)  # the reference runs now: its failure is the problem's, not a configuration's
        self._cases = cases
        return cases

    def _plan(self, cases: ShapeCases) -> ShapePlan:
        options = PlanOptions(self.device, audit=False, watch_threads=False, recheck=False, evidence=False,
                              n_sets=self.input_sets, cpu_reps=self.options.cpu_reps, l2_bytes=self.profile.l2_bytes)
        return ShapePlan(self.problem, cases, options, self.timers, self.recorder)

    def _build_model(self, shape: Shape, ref_model: torch.nn.Module) -> Any:
        assert self.module is not None
        model = self.module.Model(**shape.init_kwargs)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device).eval()
            state = ref_model.state_dict()
            if state:
                model.load_state_dict(state)
        return model

    # -- one configuration on one shape -------------------------------------------------------------------

    def measure(self, config: dict[str, Any], shape: Shape, phase: str = "search") -> Trial:
        """The trial of `config` on `shape`: cached, replayed from an earlier process, or run now."""
        key = (config_key(config), shape.shape_id)
        if key in self.log.by_key:
            return self.log.by_key[key]
        sid = shape.shape_id
        if phase == "search":
            if self.runs.get(sid, 0) >= self.options.max_configs:
                self.stop_reason.setdefault(sid, "max-configs")
                raise _Budget()
            if self.attempts.get(sid, 0) >= 4 * self.options.max_configs + 8:
                self.stop_reason.setdefault(sid, "max-configs (duplicates)")
                raise _Budget()
        known = self.known.get(key)
        if known is None and self.options.deadline_unix is not None and time.time() > self.options.deadline_unix:
            self.stop_reason.setdefault(sid, "time budget")
            raise _Budget()
        self.attempts[sid] = self.attempts.get(sid, 0) + 1
        if known is not None:
            trial = known
            trial.index = len(self.log.trials)
        else:
            index = len(self.log.trials)
            self.emit({"event": "start", "index": index, "shape_id": sid, "config": config, "phase": phase,
                       "changed": changes(config, self.default)})
            trial = self._run(index, config, shape, phase)
        if trial.status != "duplicate":
            self.runs[sid] = self.runs.get(sid, 0) + 1
        if trial.status == PASSED and trial.launch:
            self.timed_launches.setdefault(sid, {}).setdefault(trial.launch, trial.index)
        self.log.add(trial)
        roofline = self.problem.roofline.get(sid)
        self.emit({"event": "trial", "trial": trial.to_json(), "op": self.problem.name, "replayed": known is not None,
                   "bound": bound(roofline, self.profile).bottleneck if roofline else None})
        if trial.status == "cuda_error" and known is None:
            raise CudaContextLost(trial.error or "fatal CUDA error")
        return trial

    def _run(self, index: int, config: dict[str, Any], shape: Shape, phase: str) -> Trial:
        started = time.perf_counter()
        trial = Trial(index, shape.shape_id, dict(config), changes(config, self.default), phase, PASSED)
        try:
            cases = self._shape_cases(shape)
        except Exception as exc:  # the problem itself failed on this shape: not the configuration's fault
            raise SweepError(f"{self.problem.name}/{shape.shape_id}: the reference or its inputs failed: "
                             f"{_first_line(exc)}") from None
        self.apply(config)
        try:
            model = self._build_model(shape, cases.ref_model)
            plan = self._plan(cases)
            launches = run_calls(model, plan.check_only(0))
            trial.launch, trial.kernels = signature_hash(launches), sorted({launch[1] for launch in launches})
            trial.max_abs_error = plan.result.max_abs
            duplicate = self.timed_launches.get(shape.shape_id, {}).get(trial.launch)
            if not launches:
                trial.status, trial.error = "runtime_error", "no Triton kernel was launched"
            elif duplicate is not None:
                self._copy_timing(trial, self.log.trials[duplicate])
                trial.status, trial.duplicate_of = "duplicate", duplicate
            else:
                self._timed(trial, run_calls(model, plan.timing_only()), cases)
        except MeasureFailure as failure:  # a configuration's failure is data: recorded, skipped, the sweep goes on
            if failure.error.kind == "problem_error":
                raise SweepError(f"{self.problem.name}/{shape.shape_id}: {failure.error.message}") from None
            trial.status = failure.error.kind
            trial.error = _first_line(failure.cause) if failure.cause is not None else failure.error.message[:400]
        except Exception as exc:
            trial.status = "cuda_error" if is_cuda_fatal(exc) else "runtime_error"
            trial.error = _first_line(exc)
        finally:
            self.apply(self.default)
        trial.seconds = round(time.perf_counter() - started, 3)
        return trial

    def _timed(self, trial: Trial, stats: TimingStats, cases: ShapeCases) -> None:
        trial.median_ms, trial.p20_ms, trial.p80_ms = stats.median_ms, stats.p20_ms, stats.p80_ms
        trial.min_ms, trial.reps = stats.min_ms, stats.reps
        if self.device.startswith("cuda"):
            trial.saturated = stats.saturated
            trial.timing_note = stats.saturation_note or ""
        self._figures(trial, self.problem.roofline.get(cases.shape.shape_id))

    def _copy_timing(self, trial: Trial, source: Trial) -> None:
        for name in TIMING_FIELDS:
            setattr(trial, name, getattr(source, name))

    def _figures(self, trial: Trial, roofline: RooflineEntry | None) -> None:
        if roofline is None or not trial.median_ms:
            return
        seconds = trial.median_ms / 1e3
        trial.tbps = roofline.bytes_total / seconds / 1e12
        trial.bw_pct = 100.0 * trial.tbps / self.profile.hbm_bandwidth_tbps
        if roofline.flops and roofline.path != "none":
            trial.tflops = roofline.flops / seconds / 1e12
            trial.flops_pct = 100.0 * roofline.flops / seconds / self.profile.peak_flops_per_s(roofline.path)
        trial.sol_ratio = bound(roofline, self.profile).t_sol_s / seconds

    # -- searches -----------------------------------------------------------------------------------------

    def coordinate(self, shape: Shape) -> None:
        reason = strategies.coordinate(lambda config: self.measure(config, shape), self.default, self.space)
        self.stop_reason.setdefault(shape.shape_id, reason)

    def grid(self, shape: Shape) -> None:
        points = strategies.grid_points(self.space, self.default, self.options.max_configs, self.options.seed)
        reason = strategies.grid(lambda config: self.measure(config, shape), points)
        self.stop_reason.setdefault(shape.shape_id, reason)

    def crosscheck(self) -> None:
        """Time every shape's best configuration on the other shapes (for one recommended TUNABLES)."""
        configs: list[dict[str, Any]] = []
        for shape in self.shapes:
            _, best = self.log.best_of(shape.shape_id)
            if best is not None and best.config != self.default and best.config not in configs:
                configs.append(best.config)
        if not configs or len(self.shapes) < 2:
            return
        for shape in self.shapes:
            for config in configs:
                try:
                    self.measure(config, shape, phase="crosscheck")
                except _Budget:
                    return

    # -- the op -------------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Load, search every shape, cross-check; the op's record (every trial, best per shape, warnings)."""
        started = time.time()
        error, lost = None, False
        try:
            if self.module is None:
                self.load()
            self.emit({"event": "ready", "warnings": self.warnings})
            with self.recorder.installed():
                for shape in self.shapes:
                    try:
                        (self.coordinate if self.options.strategy == "coordinate" else self.grid)(shape)
                    except _Budget:
                        pass
                    self._cases = None
                if self.options.crosscheck:
                    self.crosscheck()
        except CudaContextLost as exc:
            error = f"fatal CUDA error, the rest of this op was not run: {exc}"
            lost = True
        except SweepError as exc:  # the problem itself failed on a shape: the trials so far are kept
            error = str(exc)
        finally:
            self._cases = None
            if self.module is not None:
                self.apply(self.default)
        self.warnings.extend(self.log.launch_warnings(self.shapes, self.kernel))
        record = self.record(error, time.time() - started)
        record["cuda_context_lost"] = lost
        return record

    def record(self, error: str | None = None, wall_s: float = 0.0) -> dict[str, Any]:
        shapes = [self.log.shape_summary(shape, self.problem.roofline.get(shape.shape_id), self.profile,
                                         self.stop_reason.get(shape.shape_id, "")) for shape in self.shapes]
        return {
            "op": self.problem.name, "kernel": str(self.kernel.path), "kernel_entry": self.kernel.entry_id,
            "strategy": self.options.strategy, "max_configs": self.options.max_configs, "seed": self.options.seed,
            "default_config": self.default, "search_space": self.space, "binding_warnings": self.warnings,
            "shapes": shapes, "recommended": self.log.recommendation(self.shapes),
            "trials": [t.to_json() for t in self.log.trials], "error": error, "wall_s": round(wall_s, 2),
        }


def failed_op_record(op: str, kernel: ReferenceKernel | None, error: str, trials: list[dict[str, Any]] | None = None,
                     shapes: list[Shape] | None = None) -> dict[str, Any]:
    """The record of an op whose sweep could not finish (its trials so far are kept)."""
    return {"op": op, "kernel": str(kernel.path) if kernel else None, "kernel_entry": kernel.entry_id if kernel else None,
            "default_config": dict(kernel.tunables) if kernel else {}, "binding_warnings": [],
            "shapes": [{"shape_id": s.shape_id, "tier": s.tier, "weight": s.weight} for s in shapes or []],
            "recommended": None, "trials": trials or [], "error": error}


def sweep_op(problem: Problem, kernel: ReferenceKernel, shapes: list[Shape], device: str,
             profile: HardwareProfile, options: SweepOptions, timers: Timers | None = None,
             emit: Callable[[dict[str, Any]], None] | None = None,
             known: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Sweep one op in this process (set TRITON_INTERPRET=1 before calling on the CPU)."""
    sweeper = OpSweeper(problem, kernel, shapes, device, profile, timers or Timers.capture(), options, emit, known)
    return sweeper.run()
