"""A library comparison's records: each side at each shape (ours, the library's bar, context, peer libraries), the
report, the targets it is read against, and the one vocabulary of its statuses (the engine's verdicts)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

from aka_tui.bench.measure.verdicts import PASSED

SCHEMA = "aka-library-compare/1"
TARGETS = {"gemm_bf16_linear_epilogue": 0.80, "gemm_fp8_blockscale": 0.80, "attention_prefill_varlen": 0.70}
# Ops compared only against a peer library (Liger-Kernel, liger.py): no target, the ratio is reported as it is.
PEER_OPS = ("rms_norm", "fused_add_rms_norm", "layer_norm", "silu_and_mul", "rope")
SHAPE_SETS = ("largest", "weighted", "all")
EXACT_FLOP_LIMIT = 5e10  # float64 reference up to this many FLOPs per shape, the native reference above it
DRY_RUN_NOTE = ("dry-run on the CPU with the Triton interpreter: the plumbing is exercised, the timings and "
                "ratios are meaningless")
GPU_REQUIRED = ("aka bench libraries needs a CUDA GPU (torch sees none); `--device cpu --tier smoke` runs "
                "a plumbing dry-run on the Triton interpreter (timings meaningless)")


def short_error(exc: BaseException) -> str:
    """An exception's type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:240] if text else ''}"


@dataclass
class SideResult:
    """One side of a comparison at one shape: our kernel, or one library formulation."""

    label: str
    role: str  # "ours" | "bar" | "context" | "peer" (another kernel library on the same problem, no target)
    flops: float
    check: str  # "ok", or why it is not compared
    verdict: str = ""  # the engine's vocabulary: "" while ok (passed), else wrong_output / runtime_error / tampered...
    max_abs_error: float | None = None
    median_ms: float | None = None
    round_ms: list[float] = field(default_factory=list)
    e2e_ms: float | None = None  # end to end: max(host time of one call, device time), median of the rounds
    round_e2e_ms: list[float] = field(default_factory=list)
    rounds: list[dict] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def tflops(self) -> float | None:
        if not self.ok or not self.median_ms:
            return None
        return self.flops / (self.median_ms * 1e-3) / 1e12

    @property
    def e2e_tflops(self) -> float | None:
        if not self.ok or not self.e2e_ms:
            return None
        return self.flops / (self.e2e_ms * 1e-3) / 1e12

    @property
    def status(self) -> str:
        if self.ok:
            return PASSED
        return self.verdict or ("wrong_output" if self.check.startswith("disagrees") else "runtime_error")

    def to_json(self) -> dict:
        return asdict(self) | {"tflops": self.tflops, "e2e_tflops": self.e2e_tflops, "status": self.status}


@dataclass
class ShapeComparison:
    op: str
    shape_id: str
    weight: float
    selected_as: list[str]
    target: float | None  # None: compared with peers only (PEER_OPS)
    reference_precision: str
    ours: SideResult
    library: list[SideResult]

    def rows(self) -> list[dict]:
        out = []
        for lib in self.library:
            ratio = self.ours.tflops / lib.tflops if self.ours.tflops and lib.tflops else None
            e2e = self.ours.e2e_tflops / lib.e2e_tflops if self.ours.e2e_tflops and lib.e2e_tflops else None
            if not self.ours.ok:
                status = f"ours: {self.ours.check}"
            elif not lib.ok:
                status = f"library: {lib.check}"
            else:
                status = ""
            out.append({"op": self.op, "shape": self.shape_id, "role": lib.role, "library": lib.label,
                        "ours_ms": self.ours.median_ms, "library_ms": lib.median_ms, "ours_tflops": self.ours.tflops,
                        "library_tflops": lib.tflops, "ratio": ratio, "ours_e2e_ms": self.ours.e2e_ms,
                        "library_e2e_ms": lib.e2e_ms, "e2e_ratio": e2e, "target": self.target,
                        "met": None if ratio is None or self.target is None else ratio >= self.target,
                        "status": status})
        return out

    def bar_ratio(self) -> float | None:
        """The ratio the op is read by: against the library's bar, or (an op without one) the first peer."""
        rows = self.rows()
        headline = [r for r in rows if r["role"] == "bar"] or [r for r in rows if r["role"] == "peer"]
        return headline[0]["ratio"] if headline else None

    def to_json(self) -> dict:
        return {"op": self.op, "shape_id": self.shape_id, "weight": self.weight, "selected_as": self.selected_as,
                "target": self.target, "reference_precision": self.reference_precision,
                "ours": self.ours.to_json(), "library": [s.to_json() for s in self.library], "rows": self.rows()}


@dataclass
class LibraryCompareReport:
    device: str
    device_name: str
    tier: str
    dry_run: bool
    rounds: int
    candidates_dir: str
    versions: dict
    fp8_probe: list[dict]
    comparisons: list[ShapeComparison]
    wall_s: float
    errors: dict[str, str] = field(default_factory=dict)
    peers: dict[str, dict] = field(default_factory=dict)  # peer library -> {available, version, reason}
    created_unix: float = field(default_factory=time.time)

    def op_summary(self) -> list[dict]:
        """Per op: the bar ratio at the largest shape, and the weight-weighted geometric mean over weighted shapes."""
        summary = []
        for op in dict.fromkeys(c.op for c in self.comparisons):
            comps = [c for c in self.comparisons if c.op == op]
            largest = next((c for c in comps if "largest" in c.selected_as), None)
            weighted = [c for c in comps if c.weight > 0 and "weighted" in c.selected_as]
            ratios = [(c.weight, c.bar_ratio()) for c in weighted]
            geo = None
            if ratios and all(r is not None and r > 0 for _, r in ratios):
                total = sum(w for w, _ in ratios)
                geo = math.exp(sum(w * math.log(r) for w, r in ratios) / total)  # type: ignore[arg-type,misc]
            large = largest.bar_ratio() if largest else None
            target = TARGETS.get(op)
            summary.append({"op": op, "target": target, "largest_shape": largest.shape_id if largest else None,
                            "largest_ratio": large,
                            "largest_met": None if large is None or target is None else large >= target,
                            "weighted_geomean_ratio": geo,
                            "weighted_met": None if geo is None or target is None else geo >= target})
        return summary

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "created_unix": self.created_unix, "device": self.device,
                "device_name": self.device_name, "tier": self.tier, "dry_run": self.dry_run,
                "note": DRY_RUN_NOTE if self.dry_run else "throughput bars at the same problem (docs/scoring.md)",
                "rounds": self.rounds, "candidates_dir": self.candidates_dir, "versions": self.versions,
                "targets": TARGETS, "peers": self.peers, "fp8_probe": self.fp8_probe, "errors": self.errors, "wall_s": self.wall_s,
                "summary": self.op_summary(), "comparisons": [c.to_json() for c in self.comparisons]}
