"""The per-operator table of an agent run over a suite, for BENCHMARKS.md: the path each session started from
(its own table, `aka optimize --suite --score-only`), and from one scoring run of the sessions' exports the
kernel verdict (min own_share), shapes passed, S_op, and the speed-ups over the eager and torch.compile
baselines (`aka report RUN.json EAGER.json COMPILE.json` gives them, as `paper-table.json`).

    python3 scripts/agent_suite_table.py SESSIONS_TABLE.txt RUN.json PAPER.json > table.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def session_paths(table_text: str) -> dict[str, str]:
    """op -> path, read from the sessions' fixed-width table by the header's column positions."""
    lines = table_text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("op ") and " path " in line), None)
    if header is None:
        raise SystemExit("sessions table: no header line starting with 'op' and naming 'path'")
    head = lines[header]
    start, end = head.index(" path ") + 1, head.index(" kernel ") + 1
    paths = {}
    for line in lines[header + 2:]:
        if not line.strip() or line.startswith(("S_agg", "end to end", "real kernels")):
            break
        paths[line.split()[0]] = line[start:end].strip()
    return paths


def kernel_cell(result: dict[str, Any]) -> str:
    shapes = result["shapes"]
    passed = [s for s in shapes if s["status"] == "passed"]
    shares = [s["audit"]["own_share"] for s in passed if s.get("audit") and s["audit"].get("own_share") is not None]
    share = f"{min(shares):.2f}" if shares else "-"
    if not shapes or not passed:
        return "fails every shape"
    if len(passed) < len(shapes):
        return f"fails {len(shapes) - len(passed)} of {len(shapes)} shapes (passed: {share})"
    real = all(s.get("audit") and s["audit"].get("real") for s in passed)
    return f"{'real' if real else 'fallback'} ({share})"


def first_failure(result: dict[str, Any]) -> str:
    for shape in result["shapes"]:
        if shape["status"] != "passed":
            error = shape.get("error") or {}
            message = error.get("message", "") if isinstance(error, dict) else str(error)
            return f"shape {shape['shape_id']} {shape['status']}: {message.split('; replay')[0][:160]}"
    return ""


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def build(sessions_table: str, run: dict[str, Any], paper: list[dict[str, Any]]) -> str:
    paths = session_paths(sessions_table)
    results = {r["problem"]: r for r in run["results"]}
    by_role = {subject["role"]: {row["op"]: row for row in subject["rows"]} for subject in paper}
    candidates, eager = by_role.get("candidates", {}), by_role.get("eager", {})
    out = ["| op | w% | path | kernel (min own_share) | pass | S_op eager (S_raw) | S_op after | vs eager "
           "| vs torch.compile | first failure |", "|---|---|---|---|---|---|---|---|---|---|"]
    for op in sorted(run["ops"], key=lambda o: -o["weight"]):
        name, result = op["problem"], results[op["problem"]]
        passed = sum(s["status"] == "passed" for s in result["shapes"])
        row, base = candidates.get(name, {}), eager.get(name)
        before = f"0 ({fmt(base['s_raw_op'], 3)})" if base else "-"
        out.append(f"| {name} | {100 * op['weight']:.1f} | {paths.get(name, '-')} | {kernel_cell(result)} "
                   f"| {passed}/{len(result['shapes'])} | {before} | {op['s_op']:.3f} | {fmt(row.get('vs_eager'))} "
                   f"| {fmt(row.get('vs_compile'))} | {first_failure(result)} |")
    agg = run["aggregate"]
    real = sum(1 for op in run["ops"] if op["real"])
    out.append("")
    out.append(f"S_agg {agg['s_agg']:.4f} (normalised weights), correct and real {real} of {len(run['ops'])}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    table, run, paper = (Path(a) for a in argv)
    print(build(table.read_text(), json.loads(run.read_text()), json.loads(paper.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
