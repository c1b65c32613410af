"""One problem's full-tier shapes over several GPUs: split them over suite copies, then merge the parts' reports.

Jobs are per problem, so a problem with a long shape set (a torch.compile baseline that recompiles for every
input routing takes minutes per shape) keeps one GPU busy while the others idle. Split its full-tier shapes over N suite copies,
run `aka bench --suite DIR/suiteG --ops OP` on each GPU (CUDA_VISIBLE_DEVICES=G), then merge the part reports
into one report scored with the whole suite's weights:

    python -m aka_tui.executors.shape_split split SUITE OP N OUT_DIR       # OUT_DIR/suite0 .. suite{N-1}
    python -m aka_tui.executors.shape_split merge SUITE OUT_STEM PART.json ...
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.scoring.bench_report import BenchReport, merge_shape_parts, rescore_report
from aka_tui.errors import EvaluationError, ProblemFormatError, run_main


def split_shapes(suite_dir: Path, op: str, parts: int, out: Path) -> list[list[str]]:
    """Write `out/suite<g>/<op>` for g < parts, each with every parts-th full-tier shape (the first copy also
    keeps the other tiers' shapes); the shape ids of each part."""
    if parts < 1:
        raise EvaluationError("split into at least one part")
    suite = load_suite(suite_dir)
    if op not in suite.problems:
        raise EvaluationError(f"no problem {op} in {suite_dir}")
    source = suite.problems[op].directory
    shapes = json.loads((source / "shapes.json").read_text())
    if not isinstance(shapes, dict):
        raise ProblemFormatError(f"{source / 'shapes.json'}: expected an object of shapes by id")
    full = [s.shape_id for s in suite.problems[op].shapes_for("full") if s.shape_id in shapes]
    split = []
    for g in range(parts):
        target = out / f"suite{g}" / op
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".roofline*"))
        mine = full[g::parts]
        kept = {k: v for k, v in shapes.items() if k in mine or (g == 0 and k not in full)}
        (target / "shapes.json").write_text(json.dumps(kept, indent=1) + "\n")
        split.append(mine)
    return split


def merge_parts(suite_dir: Path, parts: list[Path]) -> BenchReport:
    """The part reports (those that exist: a part that did not finish is left out) as one, rescored."""
    datas: list[dict[str, Any]] = []
    for path in parts:
        if path.exists():
            try:
                datas.append(json.loads(path.read_text()))
            except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
                raise EvaluationError(f"cannot read report {path}: {exc}") from None
    if not datas:
        raise EvaluationError(f"no part report among {', '.join(map(str, parts))}")
    return rescore_report(merge_shape_parts(datas), load_suite(suite_dir),
                          label_suffix=f"merged from {len(datas)} parts")


def main(argv: list[str]) -> int:
    from aka_tui.bench.scoring.report import write_reports

    ap = argparse.ArgumentParser(prog="python -m aka_tui.executors.shape_split",
                                 description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="action", required=True)
    s = sub.add_parser("split", help="write OUT_DIR/suite0 .. suite{N-1}, each with part of OP's full shapes")
    s.add_argument("suite", type=Path)
    s.add_argument("op")
    s.add_argument("parts", type=int)
    s.add_argument("out", type=Path)
    m = sub.add_parser("merge", help="merge the part reports into OUT_STEM.json and OUT_STEM.md")
    m.add_argument("suite", type=Path, help="the whole suite (its weights score the merged report)")
    m.add_argument("stem", type=Path, help="the merged report's path without the extension")
    m.add_argument("reports", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.action == "split":
        for g, mine in enumerate(split_shapes(args.suite, args.op, args.parts, args.out)):
            print(f"suite{g}: {sorted(mine)}")
        return 0
    report = merge_parts(args.suite, args.reports)
    json_path, md_path = write_reports(report, args.stem.parent, args.stem.name)
    for op in report.ops:
        print(f"{op.problem}: S_raw_op {op.s_raw_op:.4f}  S_op {op.s_op:.4f}")
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
