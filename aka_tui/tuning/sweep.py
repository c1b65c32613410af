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

Strategies: `coordinate` (from TUNABLES, one tunable at a time: both neighbours in its SEARCH_SPACE list,
then onwards in the better direction while it keeps winning; a change is kept only when it is faster by more
than the measured spread; passes repeat until none changes anything or the budget ends) and `grid` (the full
product, a seeded sample of it when larger than the budget). Each shape is searched on its own; with several
shapes, each shape's best configuration is then timed on the other shapes (`crosscheck`) and the one with the
best weighted geometric-mean speed-up over the default is the recommended TUNABLES.
"""

from __future__ import annotations

import ast
import json
import math
import random
import time
from dataclasses import asdict, dataclass, field, fields
from types import ModuleType
from typing import Any, Callable

import torch

import aka_tui.safe_ast as safe_ast
from aka_tui.bench.evaluator.evaluate import EvalOptions
from aka_tui.bench.measure.audit import TritonLaunchRecorder, signature_hash
from aka_tui.bench.measure.calls import MeasureFailure, is_cuda_fatal, run_calls
from aka_tui.bench.measure.cases import ShapeCases, case_seeds
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.results import TimingStats
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.measure.verdicts import PASSED
from aka_tui.bench.problem.fuzz import resolve_shape
from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.model import Problem, RooflineEntry, Shape
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.bench.roofline.bound import bound, measure_entry
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.score import weighted_geomean
from aka_tui.knowledge.reference_kernels import ReferenceKernel
from aka_tui.tuning import DEFAULT_MAX_CONFIGS, STRATEGIES, SweepError, describe_changes

SWEEP_VERSION = 1
MIN_GAIN = 0.01  # a change must also win by at least 1% of the incumbent's median (events tick at ~0.5 us)
OK_STATUSES = (PASSED, "duplicate")
FAILED_STATUSES = ("wrong_output", "runtime_error", "cuda_error", "crashed", "timeout", "tampered")
_LEGACY_STATUS = {"ok": PASSED, "error": "runtime_error"}  # records written before the engine's vocabulary


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
    input_sets: int | None = None  # rotating timing input sets: None = 3 on CUDA (as the evaluator), 1 on CPU
    cpu_reps: int = 3
    deadline_unix: float | None = None  # no configuration starts after this time.time()
    space: dict[str, list[Any]] | None = None  # SEARCH_SPACE values replaced per tunable (narrowing; tests)
    crosscheck: bool = True

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise SweepError(f"unknown --strategy {self.strategy!r}: use {' or '.join(STRATEGIES)}")
        if not isinstance(self.max_configs, int) or self.max_configs < 1:
            raise SweepError(f"--max-configs must be a positive integer, not {self.max_configs!r}")


@dataclass
class Trial:
    """One configuration on one shape: its check, its time and what that means against the roofline."""

    index: int
    shape_id: str
    config: dict[str, Any]
    changed: dict[str, Any]  # the tunables that differ from the kernel's default TUNABLES
    phase: str  # "search" | "crosscheck"
    status: str  # "passed" | "duplicate" (same launches as `duplicate_of`, not timed again) | FAILED_STATUSES
    error: str | None = None
    median_ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    min_ms: float | None = None
    reps: int | None = None
    saturated: bool | None = None  # time_cuda's GPU-saturated pass reported (None where the timer has none)
    timing_note: str = ""
    duplicate_of: int | None = None
    launch: str | None = None  # hash of the recorded launches (kernel, arguments, grid, launch options)
    kernels: list[str] = field(default_factory=list)
    max_abs_error: float | None = None
    tbps: float | None = None  # bytes read + written / median
    bw_pct: float | None = None  # of the hardware profile's HBM bandwidth
    tflops: float | None = None
    flops_pct: float | None = None  # of the profile's peak on the shape's execution path
    sol_ratio: float | None = None  # T_SOL / T: the S-like figure (the evaluator's S adds its checks)
    seconds: float = 0.0  # wall time of this trial (check, compile and timing)

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES and self.median_ms is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Trial:
        names = {f.name for f in fields(Trial)}
        values = {k: v for k, v in data.items() if k in names}
        values["status"] = _LEGACY_STATUS.get(values.get("status", ""), values.get("status", PASSED))
        return Trial(**values)


def config_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def changes(config: dict[str, Any], default: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if default.get(k, object()) != v}


# ---------------------------------------------------------------------------------------------------------
# Shapes


def select_shapes(problem: Problem, spec: str, tier: str, profile: HardwareProfile) -> list[Shape]:
    """Shapes named by `spec`: comma-separated keywords (weighted, largest, all) and/or shape ids.

    weighted: the tier's shapes that carry score weight, heaviest first; largest: the tier's shape with the
    longest T_SOL on `profile` (most bytes or FLOPs); all: every shape of the tier; an id: that shape (any
    tier, or a fuzz id as printed by `aka eval`).
    """
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    if not tokens:
        raise SweepError("--shapes is empty: use weighted, largest, all or shape ids (comma-separated)")
    pool = problem.shapes_for(tier)
    chosen: list[Shape] = []
    for token in tokens:
        if token == "all":
            picked = list(pool)
        elif token == "weighted":
            picked = sorted((s for s in pool if s.weight > 0), key=lambda s: -s.weight)
        elif token == "largest":
            sized = [(bound(problem.roofline[s.shape_id], profile).t_sol_s, s) for s in pool if s.shape_id in problem.roofline]
            if not sized:
                raise SweepError(f"{problem.name}: no cached roofline for its {tier} shapes, so 'largest' is unknown "
                                 f"(run `aka roofline {problem.name}`)")
            picked = [max(sized, key=lambda pair: pair[0])[1]]
        else:
            shape = resolve_shape(problem, token)
            if shape is None:
                raise SweepError(f"{problem.name} has no shape {token!r}; known: {', '.join(problem.shapes)}")
            picked = [shape]
        for shape in picked:
            if shape.shape_id not in {s.shape_id for s in chosen}:
                chosen.append(shape)
    if not chosen:
        tiers = sorted({s.tier for s in problem.shapes.values()})
        raise SweepError(f"{problem.name}: --shapes {spec!r} selects no {tier!r} shape (tiers: {', '.join(tiers)})")
    return chosen


# ---------------------------------------------------------------------------------------------------------
# TUNABLES binding and launch recording


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def binding_warnings(source: str, module: ModuleType) -> list[str]:
    """Ways a kernel could ignore TUNABLES changed in place (empty: every read happens at call time).

    Static: module- or class-level code reading TUNABLES at import, default arguments computed from it,
    functions rebinding it. Dynamic: a default argument that equals TUNABLES but is another dict (a copy).
    """
    warnings: list[str] = []
    tree = safe_ast.parse(source)
    assigned = 0

    def check_function(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str = "") -> None:
        label = f"{owner}{fn.name}()"
        for default in [*fn.args.defaults, *[d for d in fn.args.kw_defaults if d is not None]]:
            if _mentions(default, "TUNABLES") and not (isinstance(default, ast.Name) and default.id == "TUNABLES"):
                warnings.append(f"line {default.lineno}: a default argument of {label} is computed from TUNABLES "
                                "at import")
        for node in ast.walk(fn):
            if isinstance(node, ast.Global) and "TUNABLES" in node.names:
                warnings.append(f"line {node.lineno}: {label} rebinds the global TUNABLES")

    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TUNABLES" for t in node.targets):
            assigned += 1
            if assigned > 1:
                warnings.append(f"line {node.lineno}: TUNABLES is assigned again at module level")
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            check_function(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    check_function(item, f"{node.name}.")
                elif _mentions(item, "TUNABLES"):
                    warnings.append(f"line {item.lineno}: class {node.name} reads TUNABLES at import")
        elif _mentions(node, "TUNABLES") and not (isinstance(node, ast.Assign) and _is_search_space(node)):
            warnings.append(f"line {node.lineno}: module-level code reads TUNABLES at import")
    live = getattr(module, "TUNABLES", None)
    if not isinstance(live, dict):
        warnings.append("the module has no TUNABLES dict after import")
        return warnings
    for name, obj in vars(module).items():
        for fn in _functions_of(obj):
            defaults = list(getattr(fn, "__defaults__", None) or ()) + list((getattr(fn, "__kwdefaults__", None) or {}).values())
            if any(isinstance(d, dict) and d is not live and d == live for d in defaults):
                warnings.append(f"{getattr(fn, '__qualname__', name)}() holds a copy of TUNABLES as a default argument")
    return warnings


def _is_search_space(node: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id in ("SEARCH_SPACE", "INERT") for t in node.targets)


def _functions_of(obj: Any) -> list[Any]:
    if isinstance(obj, type):
        return [v for v in vars(obj).values() if callable(v) and hasattr(v, "__defaults__")]
    if callable(obj) and hasattr(obj, "__defaults__"):
        return [obj]
    return []


# ---------------------------------------------------------------------------------------------------------
# One op


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
        self.trials: list[Trial] = []
        self.by_key: dict[tuple[str, str], Trial] = {}
        self.runs: dict[str, int] = {}  # configurations run per shape (duplicates excluded)
        self.attempts: dict[str, int] = {}
        self.timed_launches: dict[str, dict[str, int]] = {}  # shape -> launch signature -> trial index
        self.stop_reason: dict[str, str] = {}
        self.module: ModuleType | None = None
        self.warnings: list[str] = []
        self._cases: ShapeCases | None = None
        self.recorder = TritonLaunchRecorder()
        self.input_sets = options.input_sets or (3 if device.startswith("cuda") else 1)

    # -- set-up -------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Import the reference, the input maker and the kernel (once, as this op's own module)."""
        self.ref_module = import_file(self.problem.reference_path, "ref")
        self.input_module = import_file(self.problem.input_path, "inp")
        self.module = import_file(self.kernel.path, f"sweep_{self.problem.name}")
        self.warnings = binding_warnings(self.kernel.path.read_text(), self.module)
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
        use_fp64 = problem.fp64_reference and flops <= EvalOptions.fp64_flop_limit
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
        if key in self.by_key:
            return self.by_key[key]
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
            trial.index = len(self.trials)
        else:
            index = len(self.trials)
            self.emit({"event": "start", "index": index, "shape_id": sid, "config": config, "phase": phase,
                       "changed": changes(config, self.default)})
            trial = self._run(index, config, shape, phase)
        if trial.status != "duplicate":
            self.runs[sid] = self.runs.get(sid, 0) + 1
        if trial.status == PASSED and trial.launch:
            self.timed_launches.setdefault(sid, {}).setdefault(trial.launch, trial.index)
        self.trials.append(trial)
        self.by_key[key] = trial
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
                self._copy_timing(trial, self.trials[duplicate])
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
        for name in ("median_ms", "p20_ms", "p80_ms", "min_ms", "reps", "saturated", "timing_note", "tbps",
                     "bw_pct", "tflops", "flops_pct", "sol_ratio"):
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

    def better(self, challenger: Trial, incumbent: Trial) -> bool:
        """Faster by more than the larger p20–p80 band of the two (and by ≥ MIN_GAIN of the incumbent)."""
        if not challenger.ok:
            return False
        if not incumbent.ok:
            return True
        spread = max(incumbent.p80_ms - incumbent.p20_ms, challenger.p80_ms - challenger.p20_ms,  # type: ignore[operator]
                     MIN_GAIN * incumbent.median_ms)  # type: ignore[operator]
        return incumbent.median_ms - challenger.median_ms > spread  # type: ignore[operator]

    def coordinate(self, shape: Shape) -> None:
        incumbent = self.measure(self.default, shape)
        params = [p for p, values in self.space.items() if len(values) > 1]
        changed = True
        while changed:
            changed = False
            for param in params:
                winner = self._line_search(param, incumbent, shape)
                if winner is not incumbent:
                    incumbent, changed = winner, True
        self.stop_reason.setdefault(shape.shape_id, "converged")

    def _line_search(self, param: str, incumbent: Trial, shape: Shape) -> Trial:
        values = self.space[param]
        current = incumbent.config.get(param)
        if current not in values:  # a value outside the (overridden) space: try every value once
            best = incumbent
            for value in values:
                trial = self.measure({**incumbent.config, param: value}, shape)
                if self.better(trial, best):
                    best = trial
            return best
        i = values.index(current)
        best, direction = incumbent, 0
        for step in (-1, 1):
            if 0 <= i + step < len(values):
                trial = self.measure({**incumbent.config, param: values[i + step]}, shape)
                if self.better(trial, best):
                    best, direction = trial, step
        if direction == 0:
            return incumbent
        j = i + direction
        while 0 <= j + direction < len(values):
            j += direction
            trial = self.measure({**incumbent.config, param: values[j]}, shape)
            if not self.better(trial, best):
                break
            best = trial
        return best

    def grid_points(self) -> list[dict[str, Any]]:
        """The default, then the product of the space in a seeded order (a sample of it when it is large)."""
        params = list(self.space)
        sizes = [len(self.space[p]) for p in params]
        total = math.prod(sizes)
        wanted = min(total, 4 * self.options.max_configs + 8)
        rng = random.Random(self.options.seed)
        indices = rng.sample(range(total), wanted) if total > wanted else rng.sample(range(total), total)
        points = [dict(self.default)]
        for flat in indices:
            point = {}
            for param, size in zip(reversed(params), reversed(sizes)):
                flat, digit = divmod(flat, size)
                point[param] = self.space[param][digit]
            point = {p: point[p] for p in params}
            point = {**self.default, **point}
            if point != points[0]:
                points.append(point)
        return points

    def grid(self, shape: Shape) -> None:
        for point in self.grid_points():
            self.measure(point, shape)
        self.stop_reason.setdefault(shape.shape_id, "space exhausted")

    # -- results ------------------------------------------------------------------------------------------

    def shape_trials(self, shape_id: str) -> list[Trial]:
        return [t for t in self.trials if t.shape_id == shape_id]

    def best_of(self, shape_id: str) -> tuple[Trial | None, Trial | None]:
        """(default trial, best trial): the fastest passing one when it beats the default beyond the spread."""
        default = self.by_key.get((config_key(self.default), shape_id))
        passing = [t for t in self.shape_trials(shape_id) if t.ok]
        if not passing:
            return default, None
        fastest = min(passing, key=lambda t: t.median_ms)  # type: ignore[arg-type, return-value]
        if default is not None and default.ok and not self.better(fastest, default):
            return default, default
        return default, fastest

    def crosscheck(self) -> None:
        """Time every shape's best configuration on the other shapes (for one recommended TUNABLES)."""
        configs: list[dict[str, Any]] = []
        for shape in self.shapes:
            _, best = self.best_of(shape.shape_id)
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

    def recommendation(self) -> dict[str, Any] | None:
        """The configuration with the best weighted geomean speed-up over the default on every shape."""
        defaults = {s.shape_id: self.by_key.get((config_key(self.default), s.shape_id)) for s in self.shapes}
        if not all(t is not None and t.ok for t in defaults.values()):
            return None
        candidates: list[dict[str, Any]] = [dict(self.default)]
        for shape in self.shapes:
            _, best = self.best_of(shape.shape_id)
            if best is not None and best.config not in candidates:
                candidates.append(best.config)
        scored = []
        for config in candidates:
            per_shape: dict[str, float] = {}
            for shape in self.shapes:
                trial = self.by_key.get((config_key(config), shape.shape_id))
                if trial is None or not trial.ok:
                    break
                per_shape[shape.shape_id] = defaults[shape.shape_id].median_ms / trial.median_ms  # type: ignore[union-attr, operator]
            else:
                gain = weighted_geomean([(s.weight, per_shape[s.shape_id]) for s in self.shapes])
                if gain is not None:
                    scored.append((gain, config, per_shape))
        if not scored:
            return None
        gain, config, per_shape = max(scored, key=lambda item: item[0])
        if gain <= 1.0 + MIN_GAIN:
            gain, config = 1.0, dict(self.default)
            per_shape = {s.shape_id: 1.0 for s in self.shapes}
        return {"config": config, "changed": changes(config, self.default), "weighted_speedup": gain,
                "per_shape_speedup": per_shape,
                "basis": "weighted geomean over the swept shapes" if any(s.weight > 0 for s in self.shapes)
                else "geomean over the swept shapes (none carries weight)"}

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
        self._check_launches()
        record = self.record(error, time.time() - started)
        record["cuda_context_lost"] = lost
        return record

    def _check_launches(self) -> None:
        """Warn when TUNABLES seem not to reach the launch, or when the kernel's INERT rules are contradicted."""
        canonical = getattr(self.kernel, "canonical", None)  # INERT rules (kernels may declare none)
        for shape in self.shapes:
            timed = [t for t in self.shape_trials(shape.shape_id) if t.launch]
            configs = {config_key(t.config) for t in timed}
            if len(configs) >= 3 and len({t.launch for t in timed}) == 1:
                self.warnings.append(f"{shape.shape_id}: {len(configs)} configurations all launched the same "
                                     "kernels with the same arguments: TUNABLES may not reach the launch")
            if canonical is None or not getattr(self.kernel, "inert", None):
                continue
            seen: dict[str, Trial] = {}
            for trial in timed:
                first = seen.setdefault(config_key(canonical(trial.config)), trial)
                if first.launch != trial.launch:
                    self.warnings.append(
                        f"{shape.shape_id}: #{first.index} and #{trial.index} differ only in tunables INERT declares "
                        f"inert ({describe_changes(changes(trial.config, first.config))}) but launch differently")

    def record(self, error: str | None = None, wall_s: float = 0.0) -> dict[str, Any]:
        shapes = []
        for shape in self.shapes:
            default, best = self.best_of(shape.shape_id)
            roofline = self.problem.roofline.get(shape.shape_id)
            rb = bound(roofline, self.profile) if roofline else None
            trials = self.shape_trials(shape.shape_id)
            shapes.append({
                "shape_id": shape.shape_id, "tier": shape.tier, "weight": shape.weight,
                "bytes": roofline.bytes_total if roofline else None, "flops": roofline.flops if roofline else None,
                "path": roofline.path if roofline else None, "bound": rb.bottleneck if rb else None,
                "t_sol_ms": rb.t_sol_s * 1e3 if rb else None,
                "default_index": default.index if default else None, "best_index": best.index if best else None,
                "speedup": (default.median_ms / best.median_ms) if default and best and default.ok and best.ok else None,  # type: ignore[operator]
                "stop_reason": self.stop_reason.get(shape.shape_id, ""),
                "counts": {"trials": len(trials), "passed": sum(t.status == PASSED for t in trials),
                           "duplicate": sum(t.status == "duplicate" for t in trials),
                           "failed": sum(t.status in FAILED_STATUSES for t in trials)},
            })
        return {
            "op": self.problem.name, "kernel": str(self.kernel.path), "kernel_entry": self.kernel.entry_id,
            "strategy": self.options.strategy, "max_configs": self.options.max_configs, "seed": self.options.seed,
            "default_config": self.default, "search_space": self.space, "binding_warnings": self.warnings,
            "shapes": shapes, "recommended": self.recommendation(), "trials": [t.to_json() for t in self.trials],
            "error": error, "wall_s": round(wall_s, 2),
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
