"""Rewrite a suite's op importances (problem.json) and per-shape weights (shapes.json) from a weights file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.errors import TraceError


@dataclass
class OpChange:
    """What apply did (or would do) to one op."""

    op: str
    before: float | None  # percent
    after: float | None
    shapes_set: int = 0
    shapes_zeroed: list[str] = field(default_factory=list)
    unmatched: dict[str, float] = field(default_factory=dict)  # trace shape → its weight within the op
    note: str = ""


@dataclass
class ApplyReport:
    """Per-op changes plus the trace's ops missing from the suite and the suite's ops missing from the trace."""

    changes: list[OpChange]
    not_in_suite: dict[str, float]  # op → importance %
    not_in_trace: list[str]
    written: list[Path]


def _dump_shapes(shapes: dict[str, Any]) -> str:
    body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in shapes.items())
    return "{\n" + body + "\n}\n"


def apply_weights(doc: dict[str, Any], suite_dir: Path, dry_run: bool = False,
                  allow_cpu: bool = False) -> ApplyReport:
    """Write trace importances and shape weights into the native problems of `suite_dir`."""
    prov = doc["provenance"]
    if prov.get("time_source") == "cpu" and not allow_cpu:
        raise TraceError("these weights come from CPU time of a CPU trace (time_source: cpu), not GPU-time "
                         "shares; pass --allow-cpu to apply them anyway (tests, demos)")
    suite = load_suite(suite_dir)
    sha = str(prov.get("trace_sha256", ""))[:12]
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if prov.get("basis") == "roofline":
        how = (f"{prov.get('time_source')}-linked calls timed at {prov.get('roofline_profile')} T_SOL, "
               f"floor {prov.get('launch_floor_us')} us per call")
    else:
        how = f"{prov.get('time_source')} time"
    tag = f"trace {Path(str(prov.get('trace', '?'))).name} sha256:{sha} ({how})"
    changes: list[OpChange] = []
    not_in_suite: dict[str, float] = {}
    written: list[Path] = []
    for op, o in doc["ops"].items():
        problem = suite.problems.get(op)
        if problem is None:
            not_in_suite[op] = float(o["importance"])
            continue
        if problem.source_format != "native":
            changes.append(OpChange(op, problem.importance * 100, None, note="Atrex-Bench directory: not rewritten"))
            continue
        meta_path, shapes_path = problem.directory / "problem.json", problem.directory / "shapes.json"
        meta = json.loads(meta_path.read_text())
        shapes = json.loads(shapes_path.read_text())
        change = OpChange(op, float(meta.get("importance", 0.0)), float(o["importance"]))
        meta["importance"] = round(float(o["importance"]), 4)
        meta["importance_provenance"] = (f"trace-derived: {o['importance']:.4f}% of attributed time in {tag}, "
                                         f"{o['calls']} calls; applied {when} by `aka trace apply`")
        meta["importance_trace"] = {"trace": prov.get("trace"), "trace_sha256": prov.get("trace_sha256"),
                                    "time_source": prov.get("time_source"), "basis": prov.get("basis", "observed"),
                                    "time_us": o["time_us"],
                                    "calls": o["calls"], "covered_share": o["covered_share"],
                                    "mapped_by": o["mapped_by"], "applied_at": when}
        trace_shapes: dict[str, float] = {s: float(v["weight"]) for s, v in o["shapes"].items()}
        matched = {s: w for s, w in trace_shapes.items() if s in shapes}
        change.unmatched = {s: w for s, w in trace_shapes.items() if s not in shapes}
        tiers = {shapes[s].get("tier", "full") for s in matched}
        for shape_id, spec in shapes.items():
            if spec.get("tier", "full") not in tiers:
                continue
            if shape_id in matched:
                spec["weight"] = round(matched[shape_id], 6)
                change.shapes_set += 1
            else:
                spec["weight"] = 0.0
                change.shapes_zeroed.append(shape_id)
            spec["weight_provenance"] = f"{tag}, coverage {prov.get('coverage')}; applied {when}"
        if not matched:
            change.note = "no trace shape matches a shape id: shape weights unchanged"
        changes.append(change)
        if not dry_run:
            meta_path.write_text(json.dumps(meta, indent=2) + "\n")
            written.append(meta_path)
            if matched:
                shapes_path.write_text(_dump_shapes(shapes))
                written.append(shapes_path)
    not_in_trace = sorted(set(suite.problems) - set(doc["ops"]))
    return ApplyReport(changes, not_in_suite, not_in_trace, written)


def render_apply(report: ApplyReport) -> str:
    """The before/after table and the lists of mismatches."""
    rows = [["op", "before %", "after %", "shapes set", "zeroed", "unmatched trace shapes (weight)", "note"]]
    for c in report.changes:
        unmatched = ", ".join(f"{s} ({w:.3f})" for s, w in list(c.unmatched.items())[:4])
        if len(c.unmatched) > 4:
            unmatched += f", … {len(c.unmatched) - 4} more"
        rows.append([c.op, f"{c.before:.3f}" if c.before is not None else "-",
                     f"{c.after:.3f}" if c.after is not None else "-", str(c.shapes_set), str(len(c.shapes_zeroed)),
                     unmatched or "-", c.note])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if report.not_in_suite:
        lines.append("in the trace but not in the suite (importance %): "
                     + ", ".join(f"{op} {v:.3f}" for op, v in report.not_in_suite.items()))
    if report.not_in_trace:
        lines.append("in the suite but not in the trace (unchanged): " + ", ".join(report.not_in_trace))
    return "\n".join(lines)
