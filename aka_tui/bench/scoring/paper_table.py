"""The benchmark paper's table from stored `aka bench` reports: per operator pass rates, S, speed-ups and
the production kernels' S from the data, then the aggregates; Markdown plus an SVG picture.

Each report is one *subject* (a candidate set, or the eager / torch.compile / torch.compile max-autotune
baseline). Speed-ups over each baseline come from the subject's own side-by-side timings when it has them
(`--compare-eager`, `--compare-compile`, `--compare-compile-max-autotune`), else from a baseline report given
alongside (same shapes, matched by id).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.errors import EvaluationError


@dataclass(frozen=True)
class OpRow:
    """One operator of one subject."""

    op: str
    weight: float  # normalised over the ops of the report
    shapes: int
    naive_rate: float | None  # None: the report holds no naive verdicts
    hardened_rate: float
    real_rate: float
    s_op: float
    s_raw_op: float
    s_e2e_raw_op: float
    vs_eager: float | None
    vs_compile: float | None
    production_s: float | None
    production_device: str
    correct: bool
    real: bool
    vs_compile_max: float | None = None  # over torch.compile(mode="max-autotune")
    timed_against: tuple[str, ...] = ()  # the baseline roles timed on this op (fast_1's denominators)


@dataclass
class Subject:
    """One report as a column of the paper: its rows and aggregates."""

    label: str
    role: str  # "eager" | "compile" | "compile-max-autotune" | "candidates"
    device: str
    hardware: dict[str, Any]
    wall_s: float
    rows: list[OpRow] = field(default_factory=list)
    aggregate: dict[str, Any] = field(default_factory=dict)
    points: list[tuple[float, float, str]] = field(default_factory=list)  # (FLOP/B, FLOP/s, title)
    merged_from: list[dict[str, Any]] = field(default_factory=list)  # the partial reports a merged one joins


def read_report(path: Path) -> dict[str, Any]:
    """A bench report's JSON, or one clear error line."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
        raise EvaluationError(f"cannot read report {path}: {exc}") from None
    if not isinstance(data, dict) or not {"results", "ops", "aggregate"} <= set(data):
        raise EvaluationError(f"{path} is not an `aka bench` report (needs results, ops and aggregate)")
    return data


BASELINE_ROLES = ("eager", "compile", "compile-max-autotune")
SPEEDUP_KEYS = {"eager": "speedup_vs_eager", "compile": "speedup_vs_compile",
                "compile-max-autotune": "speedup_vs_compile_max"}


def role_of(label: str, results: list[dict[str, Any]] | None = None) -> str:
    """The baseline a report scored (by its label, else by what every result evaluated), else candidates."""
    kind = label.removeprefix("baseline:").split(" ", 1)[0] if label.startswith("baseline:") else None
    if kind in BASELINE_ROLES:
        return str(kind)
    evaluated = {r.get("candidate") for r in results or [] if r.get("candidate") != "none"}
    return str(evaluated.pop()) if len(evaluated) == 1 and evaluated <= set(BASELINE_ROLES) else "candidates"


def _median_times(report: dict[str, Any], key: str = "timing") -> dict[tuple[str, str], float]:
    times: dict[tuple[str, str], float] = {}
    for result in report["results"]:
        for shape in result["shapes"]:
            timing = shape.get(key)
            if shape.get("status") == "passed" and timing and not shape.get("fuzz"):
                times[(result["problem"], shape["shape_id"])] = float(timing["median_ms"])
    return times


def _geomean_ratio(base: dict[tuple[str, str], float], mine: dict[tuple[str, str], float], op: str,
                   weights: dict[str, float]) -> float | None:
    pairs = [(weights.get(sid, 1.0), base[(o, sid)] / t) for (o, sid), t in mine.items()
             if o == op and (o, sid) in base and t > 0]
    total = sum(w for w, _ in pairs)
    if not pairs or total <= 0:
        return None
    return math.exp(sum(w * math.log(r) for w, r in pairs) / total)


def _production_s(problem: Any) -> tuple[float | None, str]:
    """Mean over shapes of the data's own SOL time / the production kernel's time, on the device most shapes
    publish both for (the data's figures, not ours)."""
    if problem is None or not getattr(problem, "production", None):
        return None, ""
    devices = Counter(t.device for timings in problem.production.values() for t in timings)
    for device, _ in devices.most_common():
        ratios = [problem.published_sol_ms[sid][device] / (t.time_us / 1e3)
                  for sid, timings in problem.production.items() for t in timings
                  if t.device == device and device in problem.published_sol_ms.get(sid, {})]
        if ratios:
            frameworks = sorted({t.framework for ts in problem.production.values() for t in ts if t.device == device})
            return sum(ratios) / len(ratios), f"{device} ({', '.join(f for f in frameworks if f)})"
    return None, ""


def _rows(report: dict[str, Any], problems: dict[str, Any], baselines: dict[str, dict[str, Any]]) -> list[OpRow]:
    """`baselines`: the baseline reports given alongside, by role (for speed-ups the report did not time)."""
    ops = {o["problem"]: o for o in report["ops"]}
    role = role_of(report["label"], report["results"])
    total_w = sum(o["weight"] for o in ops.values())
    mine = _median_times(report)
    own_eager, own_compile = _median_times(report, "eager_timing"), _median_times(report, "compile_timing")
    own_compile_max = _median_times(report, "compile_max_timing")
    eager_t, compile_t, compile_max_t = (_median_times(baselines[r]) if r in baselines else {} for r in BASELINE_ROLES)
    rows = []
    for result in report["results"]:
        name = result["problem"]
        op = ops.get(name)
        if op is None:
            continue
        shapes = [s for s in result["shapes"] if not s.get("fuzz")]
        n = max(len(shapes), 1)
        naive = [s["naive_passed"] for s in shapes if s.get("naive_passed") is not None]
        passed = [s for s in shapes if s.get("status") == "passed"]
        real = [s for s in passed if (s.get("audit") or {}).get("real")]
        weights = {s["shape_id"]: s["weight"] for s in op.get("shapes", [])}

        def has(times: dict[tuple[str, str], float]) -> bool:
            return any(k[0] == name for k in times)

        def speedup(own: dict[tuple[str, str], float], other: dict[tuple[str, str], float], stored: Any) -> float | None:
            if stored is not None:
                return float(stored)
            return _geomean_ratio(own if has(own) else other, mine, name, weights) if op["correct"] else None

        timed = tuple(r for r, own, other in zip(BASELINE_ROLES, (own_eager, own_compile, own_compile_max),
                                                   (eager_t, compile_t, compile_max_t))
                      if role != r and (has(own) or has(other) or op.get(SPEEDUP_KEYS[r]) is not None))
        production, device = _production_s(problems.get(name))
        rows.append(OpRow(
            name, op["weight"] / total_w if total_w > 0 else 1.0 / len(ops), len(shapes),
            sum(naive) / len(naive) if naive else None, len(passed) / n, len(real) / n,
            float(op["s_op"]), float(op["s_raw_op"]), float(op.get("s_e2e_raw_op", 0.0)),
            None if role == "eager" else speedup(own_eager, eager_t, op.get("speedup_vs_eager")),
            None if role == "compile" else speedup(own_compile, compile_t, op.get("speedup_vs_compile")),
            production, device, bool(op["correct"]), bool(op["real"]),
            None if role == "compile-max-autotune" else speedup(own_compile_max, compile_max_t,
                                                                op.get("speedup_vs_compile_max")), timed))
    return rows


ROLE_OF_ATTR = {"vs_eager": "eager", "vs_compile": "compile", "vs_compile_max": "compile-max-autotune"}


def _aggregate(report: dict[str, Any], rows: list[OpRow]) -> dict[str, Any]:
    agg = dict(report["aggregate"])
    n = len(rows) or 1

    def fast_1(attr: str, strict: bool) -> float | None:
        """Over the ops whose baseline was timed (a candidate that fails there counts as not faster); an op the
        baseline never ran is left out rather than counted as a loss."""
        timed = [r for r in rows if ROLE_OF_ATTR[attr] in r.timed_against]
        if not timed or all(getattr(r, attr) is None for r in rows):
            return None
        return sum(1 for r in timed if r.correct and (r.real or not strict) and (getattr(r, attr) or 0) > 1.0) / len(timed)

    naive_rows = [r for r in rows if r.naive_rate is not None]
    agg.update({
        "fast_1_vs_eager": fast_1("vs_eager", True), "fast_1_vs_compile": fast_1("vs_compile", True),
        "fast_1_vs_eager_ignoring_fallback": fast_1("vs_eager", False),
        "fast_1_vs_compile_ignoring_fallback": fast_1("vs_compile", False),
        "fast_1_vs_compile_max": fast_1("vs_compile_max", True),
        "fast_1_vs_compile_max_ignoring_fallback": fast_1("vs_compile_max", False),
        "fast_1_ops": {attr: sum(ROLE_OF_ATTR[attr] in r.timed_against for r in rows) for attr in ROLE_OF_ATTR},
        "naive_op_rate": sum(r.naive_rate == 1.0 for r in naive_rows) / len(naive_rows) if naive_rows else None,
        "hardened_op_rate": sum(r.correct for r in rows) / n,
        "real_op_rate": sum(r.correct and r.real for r in rows) / n,
        "hardened_shape_rate": sum(r.hardened_rate * r.shapes for r in rows) / max(sum(r.shapes for r in rows), 1),
        "real_shape_rate": sum(r.real_rate * r.shapes for r in rows) / max(sum(r.shapes for r in rows), 1),
    })
    return agg


def _points(report: dict[str, Any], label: str) -> list[tuple[float, float, str]]:
    points = []
    for result in report["results"]:
        for shape in result["shapes"]:
            roof, timing = shape.get("roofline") or {}, shape.get("timing")
            flops, traffic = float(roof.get("flops") or 0), float(roof.get("bytes_read", 0)) + float(roof.get("bytes_written", 0))
            if shape.get("status") != "passed" or not timing or flops <= 0 or traffic <= 0 or shape.get("fuzz"):
                continue
            seconds = float(timing["median_ms"]) / 1e3
            points.append((flops / traffic, flops / seconds, f"{label} {result['problem']}:{shape['shape_id']} "
                                                              f"{timing['median_ms']:.4g} ms"))
    return points


def build_subjects(reports: list[dict[str, Any]], problems: dict[str, Any]) -> list[Subject]:
    """One subject per report; baselines among them serve the others' speed-up columns."""
    baselines: dict[str, dict[str, Any]] = {}
    for report in reports:
        baselines.setdefault(role_of(report["label"], report["results"]), report)
    subjects = []
    for report in reports:
        rows = _rows(report, problems, baselines)
        subject = Subject(report["label"], role_of(report["label"], report["results"]), str(report.get("device")),
                          report.get("hardware") or {}, float(report.get("wall_s", 0.0)), rows,
                          merged_from=list(report.get("merged_from") or []))
        subject.aggregate = _aggregate(report, rows)
        subject.points = _points(report, report["label"])
        subjects.append(subject)
    return subjects
