"""Loader for published Atrex-Bench operator directories (`metadata.json`, `roofline.json`, `shapes.json`).

The published format, as it really is: `init_kwargs` may be null; `semantic_W_flops` is an object keyed by
dtype (`{"bf16": 7682500}`, `{"fp8_e4m3": ...}`, `{}` for integer-only work); roofline values may be null
or absent (those shapes are counted here, and the entry says so); `SOL_time_ms` gives the publisher's
speed-of-light time per device (kept for display, never used for our S); `metadata.json` carries per-tensor
dtypes ("bf16/fp16" means either) and per-shape production timings per device; the importance file sits
beside the operator directories and may list operators that have no directory here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from aka_tui.bench.problem.dtypes import execution_path, parse_dtype
from aka_tui.bench.problem.model import FAMILIES, Problem, RooflineEntry, Shape
from aka_tui.bench.problem.native import (
    check_python_defines,
    content_hash,
    fail,
    parse_dtype_field,
    parse_shapes,
    parse_tolerances,
    read_json,
)
from aka_tui.paths import aka_home

IMPORTANCE_FILE = "operator_importance.json"
ATREX_FILES = ("reference.py", "input.py", "shapes.json", "metadata.json")

# Keywords of a description or origin symbol → family (generic words of the field, never operator names).
_FAMILY_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("moe", ("moe", "expert")),
    ("attention", ("attention", "attn", "mla")),
    ("linear_attention", ("delta rule", "delta_rule", "linear attention", "mamba", "conv1d", "ssm")),
    ("quantization", ("quant",)),
    ("norm", ("norm",)),
    ("rope", ("rope", "rotary")),
    ("activation", ("silu", "gelu", "swiglu", "activation", "sigmoid")),
    ("kv_cache", ("cache",)),
    ("sampling", ("sampling", "top_p", "top-p", "nucleus")),
    ("gemm", ("gemm", "matmul", "_mm", "linear")),
)


@dataclass(frozen=True)
class ProductionTiming:
    """A production kernel's time for one shape on one device, as the data publishes it."""

    device: str
    time_us: float
    framework: str


def infer_family(text: str) -> str:
    """The first family whose keywords occur in `text` (lower-cased), else "other"."""
    lowered = text.lower()
    for family, words in _FAMILY_WORDS:
        if any(word in lowered for word in words):
            return family
    return "other"


def read_importance(suite_dir: Path, name: str) -> float | None:
    """The operator's importance from the suite's importance file; None when the file or entry is absent."""
    path = suite_dir / IMPORTANCE_FILE
    if not path.is_file():
        return None
    raw = read_json(name, path)
    if isinstance(raw, dict) and isinstance(raw.get("operators"), dict):
        raw = raw["operators"]
    value = raw.get(name) if isinstance(raw, dict) else None
    if isinstance(value, dict):
        value = next((value[k] for k in ("importance_score", "importance", "weight") if k in value), None)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise fail(name, path, f"importance of {name!r} must be a non-negative number, not {value!r}")
    return float(value)


def importance_listing(suite_dir: Path) -> dict[str, float]:
    """Every operator the importance file lists (also those without a directory here)."""
    path = suite_dir / IMPORTANCE_FILE
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if isinstance(raw, dict) and isinstance(raw.get("operators"), dict):
        raw = raw["operators"]
    listing: dict[str, float] = {}
    for name in raw if isinstance(raw, dict) else {}:
        try:
            value = read_importance(suite_dir, str(name))
        except Exception:  # a malformed entry is reported when that operator loads
            continue
        if value is not None:
            listing[str(name)] = value
    return listing


def _number(value: Any) -> float | None:
    """A finite non-negative number, None for null/absent; ValueError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(value)
    return float(value)


def _flops_by_path(name: str, path: Path, shape_id: str, raw: Any, dtype: torch.dtype) -> dict[str, float] | None:
    """W as {execution path: FLOPs}: an object keyed by dtype, or (older files) one number on the problem's dtype."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        value = _number(raw)
        return None if value is None else {execution_path(dtype): value}
    flops: dict[str, float] = {}
    for key, value in raw.items():
        try:
            key_dtype = parse_dtype(str(key))
        except KeyError:
            raise fail(name, path, f"shape {shape_id!r}: semantic_W_flops has unknown dtype key {key!r}") from None
        number = _number(value)
        if number is None:
            return None  # one unknown term: the whole W is counted here
        lane = execution_path(key_dtype)
        flops[lane] = flops.get(lane, 0.0) + number
    return flops


def _roofline(name: str, path: Path, shapes: dict[str, Shape], dtype: torch.dtype
              ) -> tuple[dict[str, RooflineEntry], dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    """(complete published entries, partial ones to finish by counting, published SOL_time_ms per device)."""
    if not path.is_file():
        return {}, {}, {}
    raw = read_json(name, path)
    if not isinstance(raw, dict):
        raise fail(name, path, "must be a JSON object")
    table = raw.get("shapes", raw)
    if not isinstance(table, dict):
        raise fail(name, path, "`shapes` must be an object keyed by shape id")
    complete: dict[str, RooflineEntry] = {}
    partial: dict[str, dict[str, Any]] = {}
    sol: dict[str, dict[str, float]] = {}
    for shape_id in shapes:
        spec = table.get(shape_id)
        if not isinstance(spec, dict):
            continue
        try:
            flops = _flops_by_path(name, path, shape_id, spec.get("semantic_W_flops"), dtype)
            read = _number(spec.get("semantic_Q_read_bytes"))
            written = _number(spec.get("semantic_Q_write_bytes"))
        except ValueError as exc:
            raise fail(name, path, f"shape {shape_id!r}: W and Q must be non-negative numbers or null, "
                                    f"not {exc.args[0]!r}") from None
        times = spec.get("SOL_time_ms")
        if isinstance(times, dict):
            sol[shape_id] = {str(k): float(v) for k, v in times.items()
                             if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0}
        if flops is not None and read is not None and written is not None:
            complete[shape_id] = RooflineEntry.from_paths(flops, read, written, execution_path(dtype), "atrex")
        else:
            partial[shape_id] = {"flops_by_path": flops, "bytes_read": read, "bytes_written": written}
    return complete, partial, sol


def _production(meta: dict[str, Any]) -> dict[str, list[ProductionTiming]]:
    shapes = meta.get("shapes")
    timings: dict[str, list[ProductionTiming]] = {}
    if not isinstance(shapes, dict):
        return timings
    for shape_id, spec in shapes.items():
        perf = spec.get("production_performance") if isinstance(spec, dict) else None
        if not isinstance(perf, dict):
            continue
        for device, entry in perf.items():
            value = entry.get("performance_us") if isinstance(entry, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
                timings.setdefault(str(shape_id), []).append(
                    ProductionTiming(str(device), float(value), str(entry.get("framework", ""))))
    return timings


def _tensor_dtypes(name: str, path: Path, raw: Any, what: str) -> dict[str, tuple[torch.dtype, ...]]:
    """{tensor: allowed dtypes}; "bf16/fp16" lists alternatives."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail(name, path, f"{what} must be an object keyed by tensor name")
    parsed: dict[str, tuple[torch.dtype, ...]] = {}
    for tensor, spec in raw.items():
        try:
            parsed[str(tensor)] = tuple(parse_dtype(part) for part in str(spec).split("/") if part.strip())
        except KeyError:
            raise fail(name, path, f"{what}[{tensor!r}]: unknown dtype {spec!r}") from None
    return parsed


def _argument_volume(shape: Shape) -> float:
    """The product of a shape's positive integer arguments (sizes, counts): how large it is when the data gives
    no roofline to say so."""
    volume = 1.0
    for value in [*(shape.init_kwargs or {}).values(), *shape.input_kwargs.values()]:
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, int) and not isinstance(item, bool) and item > 0:
                volume *= item
    return volume


def _smoke_ids(shapes: dict[str, Shape], complete: dict[str, RooflineEntry]) -> tuple[str, ...]:
    """What the CPU smoke tier runs: the published shape with the least traffic (then the fewest FLOPs); where
    some shape has no roofline (null or missing values, not counted yet), the one whose integer arguments
    multiply to the least, so a directory without rooflines still has a smoke shape (counted when it runs)."""
    if not shapes:
        return ()
    if all(shape_id in complete for shape_id in shapes):
        return (min((complete[sid].bytes_total, complete[sid].flops, sid) for sid in shapes)[2],)
    return (min(shapes, key=lambda sid: (_argument_volume(shapes[sid]), sid)),)


def counted_cache_path(problem_name: str, inputs_hash: str) -> Path:
    """Where rooflines counted here for a read-only (published) directory are kept."""
    return aka_home() / "rooflines" / f"{problem_name}-{inputs_hash}.json"


def _load_counted(name: str, inputs_hash: str, shapes: dict[str, Shape]) -> dict[str, RooflineEntry]:
    path = counted_cache_path(name, inputs_hash)
    try:
        raw = json.loads(path.read_text())
        return {sid: RooflineEntry.from_json(spec) for sid, spec in raw.get("shapes", {}).items() if sid in shapes}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no cache yet, or a damaged one: counted again


def load_atrex(directory: Path) -> Problem:
    """Load a published Atrex-Bench operator directory."""
    from aka_tui.bench.problem.native import roofline_inputs_hash

    name = directory.name
    meta_path = directory / "metadata.json"
    meta = read_json(name, meta_path)
    if not isinstance(meta, dict):
        raise fail(name, meta_path, "must be a JSON object")
    check_python_defines(name, directory / "reference.py", "class", "Model")
    check_python_defines(name, directory / "input.py", "function", "_make_inputs")
    if "dtype" not in meta:
        raise fail(name, meta_path, "missing field `dtype`")
    dtype = parse_dtype_field(name, meta_path, meta["dtype"])
    shapes_path = directory / "shapes.json"
    shapes = parse_shapes(name, shapes_path, read_json(name, shapes_path), dtype, "full")
    roofline, partial, sol = _roofline(name, directory / "roofline.json", shapes, dtype)
    inputs_hash = roofline_inputs_hash(directory)
    for shape_id, entry in _load_counted(name, inputs_hash, shapes).items():
        roofline.setdefault(shape_id, entry)
    origin: dict[str, Any] = meta["origin"] if isinstance(meta.get("origin"), dict) else {}
    first_shape: Any = next(iter((meta.get("shapes") or {}).values()), {})
    described = " ".join([str(meta.get("description", "")),
                          str(first_shape.get("description", "")) if isinstance(first_shape, dict) else ""])
    family = str(meta.get("family", meta.get("category", "")))
    family_provenance = "metadata.json"
    if family not in FAMILIES:
        family = infer_family(f"{name} {origin.get('symbol', '')}")
        family = family if family != "other" else infer_family(described)
        family_provenance = "inferred from the name, origin symbol and description"
    importance = read_importance(directory.parent, name)
    importance_source = IMPORTANCE_FILE
    if importance is None:
        meta_importance = meta.get("importance_score")
        importance = float(meta_importance) if isinstance(meta_importance, (int, float)) else 0.0
        importance_source = "metadata.json importance_score" if meta_importance is not None else "none (weight 0)"
    problem = Problem(
        name=name, directory=directory, family=family, dtype=dtype, importance=importance, shapes=shapes,
        tolerances=parse_tolerances(name, meta_path, meta.get("tolerance")),
        description=str(meta.get("description", "")),
        provenance=f"Atrex-Bench operator directory ({meta.get('id', 'no id')}, status {meta.get('status', '?')})",
        importance_provenance=importance_source, source_format="atrex",
        fp64_reference=bool(meta.get("fp64_reference", True)), roofline=roofline,
        content_hash=content_hash(directory, ATREX_FILES), family_provenance=family_provenance,
        roofline_partial=partial, published_sol_ms=sol, production=_production(meta),
        input_dtypes=_tensor_dtypes(name, meta_path, meta.get("input_dtypes"), "input_dtypes"),
        output_dtypes=_tensor_dtypes(name, meta_path, meta.get("output_dtypes"), "output_dtypes"),
        smoke_shape_ids=_smoke_ids(shapes, roofline),
    )
    return problem
