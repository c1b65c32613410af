"""The problem model: a benchmark operator, its shapes, its cached roofline entries, and a suite of them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from aka_tui.bench.problem.dtypes import dtype_name
from aka_tui.bench.problem.tolerance import Tolerance, default_tolerance
from aka_tui.errors import ProblemFormatError

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


COMPILE_FORM = "compile_form.py"


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

    @property
    def compile_form_path(self) -> Path | None:
        """`compile_form.py`: the reference's semantics written for torch.compile to trace (batched where the
        reference loops in Python), which the compile baselines compile instead; checked against the reference."""
        path = self.directory / COMPILE_FORM
        return path if path.is_file() else None

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

            from aka_tui.bench.problem.module_loading import import_file
            from aka_tui.bench.problem.shrink import shrink_shape

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
        """The least precise floating dtype the declared inputs may have; None when none are declared.

        fp8 inputs count as float16: their values are exact and references widen them to float32, but the
        hardware path a kernel is expected to take — fp8 tensor-core products summed in an accumulator that
        keeps about 14 mantissa bits on Hopper (DeepSeek-V3 report, section 3.3) — differs from a float32 sum
        by ~1e-4–1e-3 relative over a few thousand products, so a float32 output of an fp8 contraction cannot
        be held to float32's 1e-4."""
        floating = [torch.float16 if d.itemsize == 1 else d for options in self.input_dtypes.values()
                    for d in options if d.is_floating_point]
        return max(floating, key=lambda d: default_tolerance(d).rtol) if floating else None


@dataclass
class Suite:
    """Problems of a suite directory, plus the directories that failed to load (with their errors)."""

    directory: Path
    problems: dict[str, Problem]
    errors: dict[str, ProblemFormatError]
