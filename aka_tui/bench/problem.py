"""Problem model and loaders for native (`problem.json`) and Atrex-Bench (`metadata.json`) directories."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from aka_tui.bench.dtypes import dtype_name, parse_dtype
from aka_tui.bench.tolerance import Tolerance, default_tolerance
from aka_tui.errors import ProblemFormatError
import aka_tui.safe_ast as safe_ast

TIERS = ("smoke", "full")
FAMILIES = (
    "attention", "moe", "gemm", "norm", "activation", "rope", "quantization", "kv_cache", "sampling",
    "linear_attention", "other",
)
SHAPE_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Shape:
    """One evaluated configuration of a problem."""

    shape_id: str
    init_kwargs: dict[str, Any]
    input_kwargs: dict[str, Any]
    tier: str
    weight: float  # share of the op's GPU time within its tier, normalised to sum to 1
    dtype: torch.dtype
    note: str = ""


@dataclass(frozen=True)
class RooflineEntry:
    """Semantic work of one shape: FLOPs per execution path and bytes read/written once.

    `flops` is the total and `path` the primary path; `flops_by_path` is set when the work spans several
    paths (e.g. an Atrex-Bench W keyed by two dtypes), and T_SOL then sums W_path / P_path.
    """

    flops: float
    bytes_read: float
    bytes_written: float
    path: str
    source: str  # "counted", "hook", "atrex", "atrex+counted"
    flops_by_path: tuple[tuple[str, float], ...] = ()

    @property
    def bytes_total(self) -> float:
        return self.bytes_read + self.bytes_written

    def work_by_path(self) -> dict[str, float]:
        """{path: FLOPs}: the split when there is one, else all FLOPs on `path`."""
        return dict(self.flops_by_path) if self.flops_by_path else {self.path: self.flops}

    @staticmethod
    def from_paths(flops: dict[str, float], bytes_read: float, bytes_written: float, default_path: str,
                   source: str) -> RooflineEntry:
        """An entry from {path: FLOPs}; the primary path is `default_path` when present, else the largest."""
        total = float(sum(flops.values()))
        primary = default_path if default_path in flops or not flops else max(flops, key=lambda k: flops[k])
        split = tuple(sorted(flops.items())) if len(flops) > 1 else ()
        return RooflineEntry(total, float(bytes_read), float(bytes_written), primary, source, split)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"flops": self.flops, "bytes_read": self.bytes_read,
                                "bytes_written": self.bytes_written, "path": self.path, "source": self.source}
        if self.flops_by_path:
            data["flops_by_path"] = dict(self.flops_by_path)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> RooflineEntry:
        """Inverse of `to_json` (KeyError/TypeError/ValueError on a malformed record)."""
        split = data.get("flops_by_path") or {}
        return RooflineEntry(float(data["flops"]), float(data["bytes_read"]), float(data["bytes_written"]),
                             str(data["path"]), str(data.get("source", "counted")),
                             tuple(sorted((str(k), float(v)) for k, v in split.items())))


@dataclass
class Problem:
    """A benchmark operator: reference semantics, input maker, shapes, tolerances and weights."""

    name: str
    directory: Path
    family: str
    dtype: torch.dtype
    importance: float  # fraction of serving GPU time (problem.json writes percent)
    shapes: dict[str, Shape]
    tolerances: dict[str, Tolerance]
    description: str = ""
    importance_provenance: str = ""
    provenance: str = ""
    max_mismatch_fraction: float = 0.0
    fp64_reference: bool = True
    mutates_inputs: tuple[str, ...] = ()
    fuzz: dict[str, Any] = field(default_factory=dict)
    source_format: str = "native"
    roofline: dict[str, RooflineEntry] = field(default_factory=dict)
    content_hash: str = ""
    family_provenance: str = "problem.json"
    # Published-format extras (Atrex-Bench): values to finish by counting, the publisher's SOL times per
    # device (shown, never used for S), production kernel timings, declared tensor dtypes.
    roofline_partial: dict[str, dict[str, Any]] = field(default_factory=dict)
    published_sol_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    production: dict[str, list[Any]] = field(default_factory=dict)
    input_dtypes: dict[str, tuple[torch.dtype, ...]] = field(default_factory=dict)
    output_dtypes: dict[str, tuple[torch.dtype, ...]] = field(default_factory=dict)
    smoke_shape_ids: tuple[str, ...] = ()  # formats without tiers: the shapes the CPU smoke tier starts from
    _smoke_shapes: list[Shape] | None = field(default=None, repr=False, compare=False)

    @property
    def reference_path(self) -> Path:
        return self.directory / "reference.py"

    @property
    def input_path(self) -> Path:
        return self.directory / "input.py"

    @property
    def roofline_path(self) -> Path:
        return self.directory / "roofline.json"

    def shapes_for(self, tier: str | None) -> list[Shape]:
        """Shapes of one tier (all shapes when tier is None or 'all')."""
        if tier in (None, "all"):
            return list(self.shapes.values())
        if tier == "smoke" and self.smoke_shape_ids:
            return self._derived_smoke_shapes()
        return [s for s in self.shapes.values() if s.tier == tier]

    def tier_size(self, tier: str | None) -> int:
        """How many shapes `shapes_for(tier)` gives, without deriving smoke shapes."""
        if tier == "smoke" and self.smoke_shape_ids:
            return len(self.smoke_shape_ids)
        return len(self.shapes) if tier in (None, "all") else sum(s.tier == tier for s in self.shapes.values())

    def shape_by_id(self, shape_id: str) -> Shape | None:
        """A shape of the suite, or a derived smoke shape already resolved (fuzzed shapes are neither)."""
        if shape_id in self.shapes:
            return self.shapes[shape_id]
        return next((s for s in self._smoke_shapes or [] if s.shape_id == shape_id), None)

    def _derived_smoke_shapes(self) -> list[Shape]:
        """The smallest published shapes, shrunk to fit the CPU interpreter (computed once)."""
        if self._smoke_shapes is None:
            from dataclasses import replace

            from aka_tui.bench.module_loading import import_file
            from aka_tui.bench.shrink import shrink_shape

            module = import_file(self.input_path, f"smoke_inputs_{self.name}")
            shrunk = [shrink_shape(self, module, self.shapes[s]) for s in self.smoke_shape_ids]
            self._smoke_shapes = [replace(s, tier="smoke", weight=1.0 / len(shrunk)) for s in shrunk]
        return list(self._smoke_shapes)

    def tolerance_for(self, dtype: torch.dtype) -> Tolerance:
        """The problem's tolerance for an output dtype; without one, the dtype's default, loosened for a
        published problem to the precision of its floating inputs (an fp32 output computed from bf16 inputs
        is only as exact as bf16: the native reference itself differs from the float64 run that much)."""
        explicit = self.tolerances.get(dtype_name(dtype))
        if explicit:
            return explicit
        own = default_tolerance(dtype)
        floor = self.input_precision()
        if floor is None or not (dtype.is_floating_point and own.atol > 0):
            return own
        loose = default_tolerance(floor)
        return Tolerance(max(own.atol, loose.atol), max(own.rtol, loose.rtol))

    def input_precision(self) -> torch.dtype | None:
        """The least precise floating dtype the declared inputs may have (fp8 storage excluded: fp8 values
        are exact inputs that references widen before computing); None when none are declared."""
        floating = [d for options in self.input_dtypes.values() for d in options
                    if d.is_floating_point and d.itemsize > 1]
        return max(floating, key=lambda d: default_tolerance(d).rtol) if floating else None


def _fail(problem: str, path: Path, what: str) -> ProblemFormatError:
    return ProblemFormatError(f"{problem}: {path.name}: {what} ({path})")


def _read_json(problem: str, path: Path) -> Any:
    if not path.is_file():
        raise _fail(problem, path, "file is missing")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise _fail(problem, path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except OSError as exc:
        raise _fail(problem, path, f"cannot be read: {exc.strerror}") from None


def _check_python_defines(problem: str, path: Path, kind: str, name: str) -> None:
    """Statically check that a Python file parses and defines `name` (a class or function)."""
    if not path.is_file():
        raise _fail(problem, path, "file is missing")
    try:
        tree = safe_ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise _fail(problem, path, f"syntax error at line {exc.lineno}: {exc.msg}") from None
    node_type = ast.ClassDef if kind == "class" else (ast.FunctionDef, ast.AsyncFunctionDef)
    if not any(isinstance(n, node_type) and n.name == name for n in tree.body):
        raise _fail(problem, path, f"does not define {kind} `{name}`")


def _content_hash(directory: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        path = directory / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _parse_dtype_field(problem: str, path: Path, value: Any) -> torch.dtype:
    try:
        return parse_dtype(str(value))
    except KeyError:
        raise _fail(problem, path, f"unknown dtype {value!r}") from None


def _parse_shapes(problem: str, path: Path, raw: Any, default_dtype: torch.dtype, default_tier: str) -> dict[str, Shape]:
    if not isinstance(raw, dict) or not raw:
        raise _fail(problem, path, "must be a non-empty JSON object mapping shape ids to shapes")
    shapes: dict[str, Shape] = {}
    for shape_id, spec in raw.items():
        if not SHAPE_ID_RE.match(shape_id):
            raise _fail(problem, path, f"shape id {shape_id!r} must match [A-Za-z0-9_.-]+")
        if not isinstance(spec, dict):
            raise _fail(problem, path, f"shape {shape_id!r} must be an object")
        init_kwargs = spec.get("init_kwargs") or {}  # published files write null for "no arguments"
        input_kwargs = spec.get("input_kwargs") or {}
        if not isinstance(init_kwargs, dict) or not isinstance(input_kwargs, dict):
            raise _fail(problem, path, f"shape {shape_id!r}: init_kwargs and input_kwargs must be objects")
        tier = spec.get("tier", default_tier)
        if tier not in TIERS:
            raise _fail(problem, path, f"shape {shape_id!r}: tier must be one of {TIERS}, not {tier!r}")
        weight = spec.get("weight", 1.0)
        if not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise _fail(problem, path, f"shape {shape_id!r}: weight must be a non-negative number")
        dtype = default_dtype
        if "dtype" in input_kwargs:
            dtype = _parse_dtype_field(problem, path, input_kwargs["dtype"])
        shapes[shape_id] = Shape(shape_id, dict(init_kwargs), dict(input_kwargs), tier, float(weight), dtype,
                                 str(spec.get("note", "")))
    # Normalise weights within each tier.
    for tier in TIERS:
        members = [s for s in shapes.values() if s.tier == tier]
        total = sum(s.weight for s in members)
        for s in members:
            norm = s.weight / total if total > 0 else 1.0 / len(members)
            shapes[s.shape_id] = Shape(s.shape_id, s.init_kwargs, s.input_kwargs, s.tier, norm, s.dtype, s.note)
    return shapes


def _parse_tolerances(problem: str, path: Path, raw: Any) -> dict[str, Tolerance]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(problem, path, "tolerance must be an object keyed by dtype")
    tolerances: dict[str, Tolerance] = {}
    for key, spec in raw.items():
        dtype = _parse_dtype_field(problem, path, key)
        if not isinstance(spec, dict) or not {"atol", "rtol"} <= set(spec):
            raise _fail(problem, path, f"tolerance[{key!r}] must have atol and rtol")
        tolerances[dtype_name(dtype)] = Tolerance(float(spec["atol"]), float(spec["rtol"]))
    return tolerances


def _shape_arguments(directory: Path) -> bytes:
    """shapes.json reduced to what determines W and Q (kwargs per shape id): weights and notes may change."""
    try:
        raw = json.loads((directory / "shapes.json").read_text())
    except (OSError, ValueError):
        return (directory / "shapes.json").read_bytes() if (directory / "shapes.json").is_file() else b""
    if not isinstance(raw, dict):
        return json.dumps(raw, sort_keys=True).encode()
    kept = {sid: {k: spec.get(k) for k in ("init_kwargs", "input_kwargs")} if isinstance(spec, dict) else spec
            for sid, spec in raw.items()}
    return json.dumps(kept, sort_keys=True).encode()


def roofline_inputs_hash(directory: Path) -> str:
    """Hash of what determines W and Q (reference, inputs, shape arguments); other contents mean a stale cache."""
    digest = hashlib.sha256()
    for name in ("reference.py", "input.py"):
        path = directory / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(b"shapes\0" + _shape_arguments(directory))
    return digest.hexdigest()[:16]


def _load_cached_roofline(problem: str, path: Path, shapes: dict[str, Shape]) -> dict[str, RooflineEntry]:
    if not path.is_file():
        return {}
    raw = _read_json(problem, path)
    if isinstance(raw, dict) and raw.get("inputs_hash") != roofline_inputs_hash(path.parent):
        return {}  # stale: the reference, inputs or shapes changed since it was written
    entries = raw.get("shapes", {}) if isinstance(raw, dict) else {}
    cached: dict[str, RooflineEntry] = {}
    for shape_id, spec in entries.items():
        if shape_id not in shapes or not isinstance(spec, dict):
            continue
        try:
            cached[shape_id] = RooflineEntry.from_json(spec)
        except (KeyError, TypeError, ValueError):
            raise _fail(problem, path, f"entry {shape_id!r} needs flops, bytes_read, bytes_written, path") from None
    return cached


def load_native(directory: Path) -> Problem:
    """Load a native problem directory (with `problem.json`)."""
    meta_path = directory / "problem.json"
    meta = _read_json(directory.name, meta_path)
    if not isinstance(meta, dict):
        raise _fail(directory.name, meta_path, "must be a JSON object")
    name = str(meta.get("name", directory.name))
    _check_python_defines(name, directory / "reference.py", "class", "Model")
    _check_python_defines(name, directory / "input.py", "function", "_make_inputs")
    if "dtype" not in meta:
        raise _fail(name, meta_path, "missing field `dtype`")
    dtype = _parse_dtype_field(name, meta_path, meta["dtype"])
    family = str(meta.get("family", "other"))
    if family not in FAMILIES:
        raise _fail(name, meta_path, f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
    importance = meta.get("importance", 1.0)
    if not isinstance(importance, (int, float)) or importance < 0:
        raise _fail(name, meta_path, "importance must be a non-negative number (percent of GPU time)")
    shapes_path = directory / "shapes.json"
    shapes = _parse_shapes(name, shapes_path, _read_json(name, shapes_path), dtype, "full")
    mutates = meta.get("mutates_inputs", [])
    fuzz = meta.get("fuzz", {})
    if not isinstance(mutates, list) or not isinstance(fuzz, dict):
        raise _fail(name, meta_path, "mutates_inputs must be a list and fuzz an object")
    return Problem(
        name=name, directory=directory, family=family, dtype=dtype, importance=float(importance) / 100.0,
        shapes=shapes, tolerances=_parse_tolerances(name, meta_path, meta.get("tolerance")),
        description=str(meta.get("description", "")),
        importance_provenance=str(meta.get("importance_provenance", "")),
        provenance=str(meta.get("provenance", "")),
        max_mismatch_fraction=float(meta.get("max_mismatch_fraction", 0.0)),
        fp64_reference=bool(meta.get("fp64_reference", True)),
        mutates_inputs=tuple(str(m) for m in mutates), fuzz=fuzz, source_format="native",
        roofline=_load_cached_roofline(name, directory / "roofline.json", shapes),
        content_hash=_content_hash(directory, ("reference.py", "input.py", "shapes.json", "problem.json")),
    )


def load_problem(directory: str | Path) -> Problem:
    """Load one problem directory in either format; raises ProblemFormatError naming file and problem."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProblemFormatError(f"{directory}: not a directory")
    if (directory / "problem.json").exists():
        return load_native(directory)
    if (directory / "metadata.json").exists():
        from aka_tui.bench.atrex import load_atrex

        return load_atrex(directory)
    raise ProblemFormatError(
        f"{directory.name}: neither problem.json (native) nor metadata.json (Atrex-Bench) found in {directory}")


def is_problem_dir(directory: Path) -> bool:
    return directory.is_dir() and any((directory / n).exists() for n in ("problem.json", "metadata.json", "reference.py"))


@dataclass
class Suite:
    """Problems of a suite directory, plus the directories that failed to load (with their errors)."""

    directory: Path
    problems: dict[str, Problem]
    errors: dict[str, ProblemFormatError]


def load_suite(directory: str | Path) -> Suite:
    """Load every problem directory under `directory`; malformed ones are collected, not fatal."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProblemFormatError(f"suite directory {directory} does not exist")
    problems: dict[str, Problem] = {}
    errors: dict[str, ProblemFormatError] = {}
    for child in sorted(directory.iterdir()):
        if not is_problem_dir(child):
            continue
        try:
            problem = load_problem(child)
            problems[problem.name] = problem
        except ProblemFormatError as exc:
            errors[child.name] = exc
    if not problems and not errors:
        raise ProblemFormatError(f"no problem directories found in {directory}")
    return Suite(directory, problems, errors)


def default_suite_dir() -> Path:
    """The shipped suite: `problems/` beside the package (a source checkout)."""
    return Path(__file__).resolve().parents[2] / "problems"
