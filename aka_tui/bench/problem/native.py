"""The native problem directory (`problem.json`, `shapes.json`, `reference.py`, `input.py`) and the file
parsing it shares with the published format's loader (aka_tui/bench/problem/atrex.py)."""

from __future__ import annotations

import ast
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import torch

import aka_tui.safe_ast as safe_ast
from aka_tui.bench.problem.dtypes import dtype_name, parse_dtype
from aka_tui.bench.problem.model import FAMILIES, SHAPE_ID_RE, TIERS, Problem, RooflineEntry, Shape
from aka_tui.bench.problem.tolerance import Tolerance
from aka_tui.errors import ProblemFormatError


def fail(problem: str, path: Path, what: str) -> ProblemFormatError:
    return ProblemFormatError(f"{problem}: {path.name}: {what} ({path})")


def read_text(problem: str, path: Path) -> str:
    """A problem file's text (UTF-8), or one line saying why it cannot be read."""
    if not path.is_file():
        raise fail(problem, path, "file is missing")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise fail(problem, path, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise fail(problem, path, f"cannot be read: {exc.strerror}") from None


def read_json(problem: str, path: Path) -> Any:
    text = read_text(problem, path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(problem, path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def check_python_defines(problem: str, path: Path, kind: str, name: str) -> None:
    """Statically check that a Python file parses and defines `name` (a class or function)."""
    source = read_text(problem, path)
    try:
        tree = safe_ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise fail(problem, path, safe_ast.parse_error_text(exc)) from None
    except ValueError as exc:  # e.g. null bytes, on Pythons that do not call them a syntax error
        raise fail(problem, path, f"not Python source: {exc}") from None
    node_type = ast.ClassDef if kind == "class" else (ast.FunctionDef, ast.AsyncFunctionDef)
    if not any(isinstance(n, node_type) and n.name == name for n in tree.body):
        raise fail(problem, path, f"does not define {kind} `{name}`")


def content_hash(directory: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        path = directory / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def parse_dtype_field(problem: str, path: Path, value: Any) -> torch.dtype:
    try:
        return parse_dtype(str(value))
    except KeyError:
        raise fail(problem, path, f"unknown dtype {value!r}") from None


def parse_shapes(problem: str, path: Path, raw: Any, default_dtype: torch.dtype, default_tier: str) -> dict[str, Shape]:
    if not isinstance(raw, dict) or not raw:
        raise fail(problem, path, "must be a non-empty JSON object mapping shape ids to shapes")
    shapes: dict[str, Shape] = {}
    for shape_id, spec in raw.items():
        if not SHAPE_ID_RE.match(shape_id):
            raise fail(problem, path, f"shape id {shape_id!r} must match [A-Za-z0-9_.-]+")
        if not isinstance(spec, dict):
            raise fail(problem, path, f"shape {shape_id!r} must be an object")
        init_kwargs = spec.get("init_kwargs") or {}  # published files write null for "no arguments"
        input_kwargs = spec.get("input_kwargs") or {}
        if not isinstance(init_kwargs, dict) or not isinstance(input_kwargs, dict):
            raise fail(problem, path, f"shape {shape_id!r}: init_kwargs and input_kwargs must be objects")
        tier = spec.get("tier", default_tier)
        if tier not in TIERS:
            raise fail(problem, path, f"shape {shape_id!r}: tier must be one of {TIERS}, not {tier!r}")
        weight = spec.get("weight", 1.0)
        if not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise fail(problem, path, f"shape {shape_id!r}: weight must be a non-negative number")
        dtype = default_dtype
        if "dtype" in input_kwargs:
            dtype = parse_dtype_field(problem, path, input_kwargs["dtype"])
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


def parse_tolerances(problem: str, path: Path, raw: Any) -> dict[str, Tolerance]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail(problem, path, "tolerance must be an object keyed by dtype")
    tolerances: dict[str, Tolerance] = {}
    for key, spec in raw.items():
        dtype = parse_dtype_field(problem, path, key)
        if not isinstance(spec, dict) or not {"atol", "rtol"} <= set(spec):
            raise fail(problem, path, f"tolerance[{key!r}] must have atol and rtol")
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


def load_cached_roofline(problem: str, path: Path, shapes: dict[str, Shape],
                         check_hash: bool = True) -> dict[str, RooflineEntry]:
    """The cached entries of `shapes`; none when the file is stale (`check_hash=False`: as written, stale or not,
    for a recount to compare with)."""
    if not path.is_file():
        return {}
    raw = read_json(problem, path)
    if check_hash and isinstance(raw, dict) and raw.get("inputs_hash") != roofline_inputs_hash(path.parent):
        return {}  # stale: the reference, inputs or shapes changed since it was written
    entries = raw.get("shapes", {}) if isinstance(raw, dict) else {}
    cached: dict[str, RooflineEntry] = {}
    for shape_id, spec in entries.items():
        if shape_id not in shapes or not isinstance(spec, dict):
            continue
        try:
            cached[shape_id] = RooflineEntry.from_json(spec)
        except (KeyError, TypeError, ValueError):
            raise fail(problem, path, f"entry {shape_id!r} needs flops, bytes_read, bytes_written, path") from None
    return cached


def load_native(directory: Path) -> Problem:
    """Load a native problem directory (with `problem.json`)."""
    meta_path = directory / "problem.json"
    meta = read_json(directory.name, meta_path)
    if not isinstance(meta, dict):
        raise fail(directory.name, meta_path, "must be a JSON object")
    name = str(meta.get("name", directory.name))
    check_python_defines(name, directory / "reference.py", "class", "Model")
    check_python_defines(name, directory / "input.py", "function", "_make_inputs")
    if "dtype" not in meta:
        raise fail(name, meta_path, "missing field `dtype`")
    dtype = parse_dtype_field(name, meta_path, meta["dtype"])
    family = str(meta.get("family", "other"))
    if family not in FAMILIES:
        raise fail(name, meta_path, f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
    importance = meta.get("importance", 1.0)
    if not isinstance(importance, (int, float)) or importance < 0:
        raise fail(name, meta_path, "importance must be a non-negative number (percent of GPU time)")
    shapes_path = directory / "shapes.json"
    shapes = parse_shapes(name, shapes_path, read_json(name, shapes_path), dtype, "full")
    mutates = meta.get("mutates_inputs", [])
    fuzz = meta.get("fuzz", {})
    if not isinstance(mutates, list) or not isinstance(fuzz, dict):
        raise fail(name, meta_path, "mutates_inputs must be a list and fuzz an object")
    return Problem(
        name=name, directory=directory, family=family, dtype=dtype, importance=float(importance) / 100.0,
        shapes=shapes, tolerances=parse_tolerances(name, meta_path, meta.get("tolerance")),
        description=str(meta.get("description", "")),
        importance_provenance=str(meta.get("importance_provenance", "")),
        provenance=str(meta.get("provenance", "")),
        max_mismatch_fraction=float(meta.get("max_mismatch_fraction", 0.0)),
        fp64_reference=bool(meta.get("fp64_reference", True)),
        mutates_inputs=tuple(str(m) for m in mutates), fuzz=fuzz, source_format="native",
        roofline=load_cached_roofline(name, directory / "roofline.json", shapes),
        content_hash=content_hash(directory, ("reference.py", "input.py", "shapes.json", "problem.json")),
    )
