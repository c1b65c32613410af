"""How close a scored run's kernels come to the roofline, read from its report (nothing is re-run).

Two Markdown tables from an `aka bench` report, or from `aka sessions --score --out` (the agent's incumbents, chosen
by `aka_tui.agent.suite_score`'s rule: the newest session's last accepted candidate per problem):

- **bandwidth at the largest shape**: every op whose largest full shape (by the bytes the roofline counts) is
  memory-bound on the report's profile; those bytes over the kernel's median time, against the calibrated copy
  bandwidth and, when given, against a copy of the same bytes timed like a candidate (`scripts/copy_ceiling.py`,
  which picks its ops with `largest_memory_bound` here, so the rows match). Below ~200 MB a copy itself stays under
  85% of the 4 GiB calibrated figure; the same-size copy is the ceiling a kernel can reach.
- **per shape** (`--shapes-of OP,...`): each full shape's bound, T, T_SOL, T_SOL / T (the score's S_raw) and TB/s.

    python -m aka_tui.bench.scoring.roofline_tables REPORT.json [--copy copy-ceiling.json] [--calibrated TBPS]
        [--shapes-of OP,OP] [--suite DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aka_tui.bench.problem.model import Problem, Shape, Suite
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.bench_report import BenchReport
from aka_tui.bench.scoring.report import markdown_table
from aka_tui.bench.scoring.score import ShapeScore
from aka_tui.errors import EvaluationError, run_main

BANDWIDTH_HEADERS = ["op", "largest shape", "MB", "kernel µs", "TB/s", "% of calibrated copy", "same-size copy TB/s",
                     "% of it"]
SHAPE_HEADERS = ["op", "shape", "bound", "T µs", "T_SOL µs", "T_SOL/T", "TB/s"]


def largest_full_shape(problem: Problem) -> Shape | None:
    """The full-tier shape that moves the most bytes by the roofline (None without a full-tier roofline)."""
    shapes = [s for s in problem.shapes_for("full") if s.shape_id in problem.roofline]
    return max(shapes, key=lambda s: problem.roofline[s.shape_id].bytes_total) if shapes else None


def largest_memory_bound(suite: Suite, profile: HardwareProfile,
                         ops: list[str] | None = None) -> list[tuple[str, str, float]]:
    """(op, shape id, bytes) of each op (of `ops`, if given) whose largest full shape is memory-bound."""
    rows = []
    for name, problem in suite.problems.items():
        shape = largest_full_shape(problem) if not ops or name in ops else None
        if shape is None:
            continue
        entry = problem.roofline[shape.shape_id]
        if bound(entry, profile).bottleneck == "memory":
            rows.append((name, shape.shape_id, entry.bytes_total))
    return rows


def _tbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e12


def _passed_shapes(report: BenchReport) -> dict[str, dict[str, ShapeScore]]:
    """Per op, the shapes that passed with a time (a failed shape's time says nothing about the kernel)."""
    return {op.problem: {s.shape_id: s for s in op.shapes if s.passed and s.time_ms} for op in report.ops}


def bandwidth_rows(report: BenchReport, suite: Suite, calibrated_tbps: float,
                   ceiling: dict[str, dict[str, Any]]) -> list[list[str]]:
    """One row per memory-bound op that passed its largest full shape."""
    measured = _passed_shapes(report)
    rows = []
    for op, shape_id, nbytes in sorted(largest_memory_bound(suite, report.hardware)):
        shape = measured.get(op, {}).get(shape_id)
        if shape is None or shape.time_ms is None:
            continue
        tbps = _tbps(nbytes, shape.time_ms)
        copy = ceiling.get(op)
        same = [f"{copy['copy_tbps']:.2f}", f"{tbps / copy['copy_tbps']:.0%}"] if copy else ["-", "-"]
        rows.append([op, shape_id, f"{nbytes / 1e6:.1f}", f"{shape.time_ms * 1e3:.1f}", f"{tbps:.2f}",
                     f"{tbps / calibrated_tbps:.0%}", *same])
    return rows


def shape_rows(report: BenchReport, suite: Suite, ops: list[str]) -> list[list[str]]:
    """Every passed full shape of `ops`: the score's T_SOL, T and S_raw beside the achieved bandwidth."""
    measured = _passed_shapes(report)
    rows = []
    for op in ops:
        problem = suite.problems[op]
        for shape in problem.shapes_for("full"):
            s = measured.get(op, {}).get(shape.shape_id)
            if s is None or s.time_ms is None or s.t_sol_ms is None or shape.shape_id not in problem.roofline:
                continue
            nbytes = problem.roofline[shape.shape_id].bytes_total
            rows.append([op, shape.shape_id, s.bottleneck or "-", f"{s.time_ms * 1e3:.1f}", f"{s.t_sol_ms * 1e3:.1f}",
                         f"{s.s_raw:.3f}", f"{_tbps(nbytes, s.time_ms):.2f}"])
    return rows


def render(report: BenchReport, suite: Suite, calibrated_tbps: float, ceiling: dict[str, dict[str, Any]],
           shapes_of: list[str]) -> str:
    parts = [f"{report.label} on {report.device} (profile {report.hardware.name}, tier {report.tier})", "",
             f"Memory-bound ops at their largest full shape (calibrated copy {calibrated_tbps:.3f} TB/s; "
             f"85% = {0.85 * calibrated_tbps:.2f} TB/s)", "",
             markdown_table(bandwidth_rows(report, suite, calibrated_tbps, ceiling), BANDWIDTH_HEADERS)]
    if shapes_of:
        parts += ["", f"T_SOL / T per full shape (where memory-bound: the fraction of the "
                      f"{report.hardware.hbm_bandwidth_tbps:g} TB/s roofline)", "",
                  markdown_table(shape_rows(report, suite, shapes_of), SHAPE_HEADERS)]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    from aka_tui.bench.problem.lookup import default_suite_dir, load_suite
    from aka_tui.bench.scoring.bench_report import rescore_report

    ap = argparse.ArgumentParser(prog="python -m aka_tui.bench.scoring.roofline_tables",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("report", type=Path, help="an aka bench report (JSON), e.g. from aka sessions --score --out")
    ap.add_argument("--copy", type=Path, help="scripts/copy_ceiling.py's JSON: the same-size copy per op")
    ap.add_argument("--calibrated", type=float,
                    help="calibrated copy TB/s (default: the copy JSON's, else the profile's HBM bandwidth)")
    ap.add_argument("--shapes-of", default="", metavar="OP,OP", help="ops whose every full shape to list")
    ap.add_argument("--suite", type=Path, help="suite directory (default: the shipped problems/)")
    args = ap.parse_args(argv)
    suite = load_suite(args.suite or default_suite_dir())
    try:
        data = json.loads(args.report.read_text())
        copy = json.loads(args.copy.read_text()) if args.copy else {"rows": []}
    except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
        raise EvaluationError(f"cannot read {exc}") from None
    shapes_of = [o for o in args.shapes_of.split(",") if o]
    unknown = [o for o in shapes_of if o not in suite.problems]
    if unknown:
        raise EvaluationError(f"--shapes-of: no problem {', '.join(unknown)} in {suite.directory}")
    # Scored again with the suite's current roofline, against the profile the report was measured with.
    report = rescore_report(data, suite, label_suffix="roofline tables")
    calibrated = args.calibrated or copy.get("calibrated_copy_tbps") or report.hardware.hbm_bandwidth_tbps
    print(render(report, suite, calibrated, {r["op"]: r for r in copy.get("rows", [])}, shapes_of))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
