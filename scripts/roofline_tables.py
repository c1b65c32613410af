"""Issue 8's tables from recorded `aka optimize` sessions (nothing is re-run).

For every op: the newest session's incumbent (the accepted iteration with the best S_op); for the memory-bound
families, the achieved bandwidth at the largest full shape (bytes the roofline counts / median kernel time)
against the calibrated copy bandwidth and, if given, the copy ceiling at the same size (scripts/copy_ceiling.py);
for decode attention, T_SOL / T at every shape (the fraction of the bandwidth roofline when memory-bound).

    python3 scripts/roofline_tables.py SESSIONS_DIR [--copy copy-ceiling.json] [--calibrated TBPS]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aka_tui.bench.problem.lookup import load_suite  # noqa: E402
from aka_tui.bench.roofline.bound import bound  # noqa: E402
from aka_tui.bench.roofline.hardware import get_profile  # noqa: E402

MEMORY_FAMILIES = ("norm", "activation", "rope", "quantization", "kv_cache", "moe_sum_reduce")


def newest_sessions(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for d in sorted(root.iterdir()):
        if (d / "session.json").is_file():
            op = json.loads((d / "session.json").read_text()).get("problem") or d.name.rsplit("-", 2)[0]
            out[op] = d  # sorted by name: op-YYYYMMDD-HHMMSS, the newest last
    return out


def incumbent_shapes(session: Path) -> dict[str, dict]:
    """Per-shape records of the iteration with the best mean shape S among real, fully passing ones."""
    best, best_key = {}, -1.0
    for result in sorted(session.glob("iterations/*/result.json")):
        data = json.loads(result.read_text())
        shapes = {s["shape_id"]: s for s in data.get("shapes", []) if s.get("timing")}
        if not shapes or any(s["status"] != "passed" for s in shapes.values()):
            continue
        if len(shapes) > len(best) or (len(shapes) == len(best) and _speed(shapes) > best_key):
            best, best_key = shapes, _speed(shapes)
    return best


def _speed(shapes: dict[str, dict]) -> float:
    return sum(1.0 / s["timing"]["median_ms"] for s in shapes.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("sessions", type=Path)
    ap.add_argument("--copy", type=Path)
    ap.add_argument("--calibrated", type=float, default=None)
    args = ap.parse_args()
    suite = load_suite("problems")
    profile = get_profile("h200")
    copy = json.loads(args.copy.read_text()) if args.copy else {"rows": []}
    calibrated = args.calibrated or copy.get("calibrated_copy_tbps") or profile.hbm_bandwidth_tbps
    ceiling = {r["op"]: r for r in copy["rows"]}
    sessions = newest_sessions(args.sessions)
    print(f"Memory-bound families at their largest full shape (calibrated copy {calibrated:.3f} TB/s; "
          f"85% = {0.85 * calibrated:.2f} TB/s)")
    print("| op | largest shape | MB | kernel us | TB/s | % of calibrated copy | same-size copy TB/s | % of it |")
    print("|---|---|---|---|---|---|---|---|")
    for op, problem in sorted(suite.problems.items()):
        if op not in sessions or not (problem.family in MEMORY_FAMILIES or op in MEMORY_FAMILIES):
            continue
        shapes = incumbent_shapes(sessions[op])
        full = [s for s in problem.shapes_for("full") if s.shape_id in shapes and s.shape_id in problem.roofline]
        if not full:
            continue
        shape = max(full, key=lambda s: problem.roofline[s.shape_id].bytes_total)
        nbytes = problem.roofline[shape.shape_id].bytes_total
        ms = shapes[shape.shape_id]["timing"]["median_ms"]
        tbps = nbytes / (ms * 1e-3) / 1e12
        c = ceiling.get(op)
        same = f"{c['copy_tbps']:.2f} | {tbps / c['copy_tbps']:.0%}" if c else "- | -"
        print(f"| {op} | {shape.shape_id} | {nbytes / 1e6:.1f} | {ms * 1e3:.1f} | {tbps:.2f} | "
              f"{tbps / calibrated:.0%} | {same} |")
    print("\nDecode attention: T_SOL / T per full shape (memory-bound: the fraction of the 4.8 TB/s roofline)")
    print("| op | shape | bound | T us | T_SOL us | T_SOL/T | TB/s |")
    print("|---|---|---|---|---|---|---|")
    for op in ("attention_paged_decode", "attention_mla_decode"):
        if op not in sessions:
            continue
        problem = suite.problems[op]
        shapes = incumbent_shapes(sessions[op])
        for s in problem.shapes_for("full"):
            if s.shape_id not in shapes or s.shape_id not in problem.roofline:
                continue
            entry = problem.roofline[s.shape_id]
            b = bound(entry, profile)
            ms = shapes[s.shape_id]["timing"]["median_ms"]
            print(f"| {op} | {s.shape_id} | {b.bottleneck} | {ms * 1e3:.1f} | {b.t_sol_s * 1e6:.1f} | "
                  f"{b.t_sol_s / (ms * 1e-3):.3f} | {entry.bytes_total / (ms * 1e-3) / 1e12:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
