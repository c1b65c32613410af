"""What the evaluator's integrity checks cost, and whether they moved S: two `aka bench` reports of the same
candidates, one with the checks and one with `--no-timed-verification`, optionally a reference report.

Prints per op: S_op with the checks, without, in the reference (and the ratios), and each op's evaluation wall
time (`provenance.wall_s`) with and without; then the totals: the timed-call verification's cost (the wall-time
difference), the parent check's own seconds (recorded in every result), and both as a share of the evaluation.

    python3 scripts/engine_cost.py WITH.json WITHOUT.json [REFERENCE.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _ops(path: Path) -> tuple[dict, dict[str, dict]]:
    data = json.loads(path.read_text())
    walls = {r["problem"]: r.get("provenance", {}) for r in data.get("results", [])}
    ops = {o["problem"]: {"s_op": o["s_op"], "real": o["real"], "correct": o["correct"], "holds": o.get("holds", []),
                          "wall_s": walls.get(o["problem"], {}).get("wall_s"),
                          "parent_s": (walls.get(o["problem"], {}).get("checks") or {}).get("seconds", {}).get(
                              "parent_check", 0.0)} for o in data["ops"]}
    return data, ops


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}" if a is not None and b else "-"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    with_data, with_ops = _ops(Path(argv[0]))
    without_data, without_ops = _ops(Path(argv[1]))
    reference = _ops(Path(argv[2]))[1] if len(argv) > 2 else {}
    print("| op | S_op checks | S_op no timed verification | ratio | S_op reference | ratio | wall s checks | wall s "
          "without | parent check s |\n|---|---|---|---|---|---|---|---|---|")
    for op in sorted(with_ops):
        a, b, r = with_ops[op], without_ops.get(op, {}), reference.get(op, {})
        print(f"| {op} | {a['s_op']:.3f} | {b.get('s_op', float('nan')):.3f} | {_ratio(a['s_op'], b.get('s_op'))} | "
              f"{r.get('s_op', float('nan')):.3f} | {_ratio(a['s_op'], r.get('s_op'))} | {a['wall_s']} | "
              f"{b.get('wall_s')} | {a['parent_s']} |")
    wall_with = sum(o["wall_s"] or 0.0 for o in with_ops.values())
    wall_without = sum((without_ops.get(op, {}).get("wall_s") or 0.0) for op in with_ops)
    parent = sum(o["parent_s"] or 0.0 for o in with_ops.values())
    print(f"S_agg with checks {with_data['aggregate']['s_agg']:.4f}, without timed verification "
          f"{without_data['aggregate']['s_agg']:.4f}; real {sum(o['real'] for o in with_ops.values())}/{len(with_ops)}; "
          f"held {sum(bool(o['holds']) for o in with_ops.values())}")
    print(f"evaluation wall (sum over ops): {wall_with:.1f} s with the checks, {wall_without:.1f} s without the "
          f"timed-call verification: {(wall_with - wall_without) / wall_without:+.1%}; the parent check {parent:.1f} s "
          f"({parent / wall_with:.1%} of the run with checks; it runs in both)")
    print(f"bench wall: {with_data['wall_s']} s with, {without_data['wall_s']} s without")
    startup = [_provenance_seconds(d, "worker_startup") for d in (with_data, without_data)]
    if any(startup):
        print(f"worker starts (sandbox, imports, device context, the candidate's import), summed over ops: "
              f"{startup[0]:.1f} s with, {startup[1]:.1f} s without")
    stages_with, stages_without = _stage_seconds(with_data), _stage_seconds(without_data)
    if stages_with or stages_without:
        names = sorted(set(stages_with) | set(stages_without))
        print("seconds per stage, summed over shapes (with / without): " + ", ".join(
            f"{n} {stages_with.get(n, 0.0):.1f} / {stages_without.get(n, 0.0):.1f}" for n in names))
        # Measured inside each run, so unlike the wall-time difference it does not carry the run-to-run spread
        # (worker start, compiles from cache, the machine) of two separate runs.
        plan_with = sum(v for k, v in stages_with.items() if k != "verify_timed")
        plan_without = sum(v for k, v in stages_without.items() if k != "verify_timed")
        print(f"the checks' cost inside the runs: {plan_with:.1f} s of measurement stages with, {plan_without:.1f} s "
              f"without: {plan_with - plan_without:+.1f} s = {(plan_with - plan_without) / wall_without:+.1%} of the "
              "evaluation without them")
    return 0


def _provenance_seconds(data: dict, key: str) -> float:
    """A step of every op's evaluation outside the shapes (reports written since the evaluator records it)."""
    return sum(((r.get("provenance") or {}).get("checks") or {}).get("seconds", {}).get(key, 0.0)
               for r in data.get("results", []))


def _stage_seconds(data: dict) -> dict[str, float]:
    """Wall seconds per measurement stage over every shape (reports written since the engine records them)."""
    totals: dict[str, float] = {}
    for result in data.get("results", []):
        for shape in result.get("shapes", []):
            verification = shape.get("verification") or {}
            for stage, seconds in (verification.get("seconds") or {}).items():
                totals[stage] = totals.get(stage, 0.0) + seconds
            if "verify_timed_s" in verification:
                totals["verify_timed"] = totals.get("verify_timed", 0.0) + verification["verify_timed_s"]
    return totals


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
