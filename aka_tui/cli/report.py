"""`aka report REPORT.json...`: the benchmark table (Markdown + SVG) from stored `aka bench` reports."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="the benchmark table (Markdown + SVG) from one or more bench reports",
                       description="Per operator: pass rates (naive, hardened, correct and real), S_op, S_e2e, "
                                   "speed-up over eager and torch.compile (and torch.compile max-autotune when "
                                   "measured), the production kernels' S from the data; then S_agg, fast_1 and the "
                                   "aggregate pass rates. Give baseline reports (aka bench run --baseline "
                                   "eager|compile|compile-max-autotune) beside a candidate report for its speed-ups.")
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="`aka bench` JSON reports")
    p.add_argument("--suite", help="the suite directory (default: the one each report names), for production timings")
    p.add_argument("--out", help="output directory (default: beside the first report)")
    p.add_argument("--name", help="file stem (default paper-table)")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from aka_tui.bench.problem.lookup import load_suite
    from aka_tui.bench.scoring.paper_render import write_paper
    from aka_tui.bench.scoring.paper_table import build_subjects, read_report

    reports = [read_report(Path(p)) for p in args.reports]
    problems: dict[str, Any] = {}
    suite_dirs = [Path(args.suite)] if args.suite else [Path(r.get("suite_dir", "")) for r in reports]
    for directory in dict.fromkeys(suite_dirs):
        if directory.is_dir():  # production figures come from the data; a report moved elsewhere still renders
            problems.update(load_suite(directory).problems)
    subjects = build_subjects(reports, problems)
    out = Path(args.out) if args.out else Path(args.reports[0]).parent
    stem = args.name or "paper-table"
    json_path, md_path, svg_path = write_paper(subjects, out, stem)
    for subject in subjects:
        a = subject.aggregate
        print(f"{subject.label}: S_agg {a.get('s_agg', 0):.4f}  S_raw_agg {a.get('s_raw_agg', 0):.4f}  "
              f"S_e2e_raw_agg {a.get('s_e2e_raw_agg', 0):.4f}  correct-and-real {a.get('real_op_rate', 0):.0%} "
              f"of {len(subject.rows)} ops  ({subject.wall_s:.0f} s)")
    print(f"wrote {md_path}, {svg_path} and {json_path}")
    return 0
