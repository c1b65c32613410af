"""Split one problem's full-tier shapes over N suite copies (one per GPU), or merge the per-part reports.

Used by `scripts/device_phases.sh moecompile`: the compile baseline of moe_fused_experts takes minutes per
shape (dynamo recompiles for every routing until its recompile limit), and jobs are per problem, so the
only way to use two GPUs for it is to give each GPU a suite holding part of the shapes.

    python3 scripts/split_suite.py SUITE OP N OUT_DIR          # writes OUT_DIR/suite0 .. suite{N-1}
    python3 scripts/split_suite.py --merge SUITE STEM PART.json ...  # one report, scored with SUITE's weights
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def split(suite: Path, op: str, parts: int, out: Path) -> None:
    shapes = json.loads((suite / op / "shapes.json").read_text())
    full = [k for k, v in shapes.items() if v.get("tier") == "full"]
    for g in range(parts):
        target = out / f"suite{g}" / op
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(suite / op, target, ignore=shutil.ignore_patterns("__pycache__", ".roofline*"))
        mine = set(full[g::parts])
        kept = {k: v for k, v in shapes.items() if k in mine or (g == 0 and v.get("tier") != "full")}
        (target / "shapes.json").write_text(json.dumps(kept, indent=1) + "\n")
        print(f"suite{g}: {sorted(mine)}")


def merge(suite_dir: Path, stem: Path, parts: list[Path]) -> None:
    from aka_tui.bench.problem.lookup import load_suite
    from aka_tui.bench.scoring.bench_report import rescore_report
    from aka_tui.bench.scoring.report import render_markdown, write_reports  # noqa: F401

    datas = [json.loads(p.read_text()) for p in parts if p.exists()]
    if not datas:
        sys.exit(f"no part report among {', '.join(map(str, parts))}")
    merged = datas[0]
    by_op = {r["problem"]: r for r in merged["results"]}
    for extra in datas[1:]:
        for result in extra["results"]:
            if result["problem"] in by_op:
                by_op[result["problem"]]["shapes"].extend(result["shapes"])
            else:
                merged["results"].append(result)
    merged["wall_s"] = max(float(d.get("wall_s", 0)) for d in datas)
    report = rescore_report(merged, load_suite(suite_dir), label_suffix=f"merged from {len(datas)} parts")
    json_path, md_path = write_reports(report, stem.parent, stem.name)
    for op in report.ops:
        print(f"{op.problem}: S_raw_op {op.s_raw_op:.4f}  S_op {op.s_op:.4f}")
    print(f"wrote {json_path} and {md_path}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--merge":
        merge(Path(args[1]), Path(args[2]), [Path(a) for a in args[3:]])
    else:
        split(Path(args[0]), args[1], int(args[2]), Path(args[3]))
