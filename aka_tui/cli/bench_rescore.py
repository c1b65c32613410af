"""`aka bench rescore REPORT...`: stored reports scored again under the suite's current weights (nothing re-run)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aka_tui.cli.arguments import add_accept_flags, add_report_flags, add_suite_flag
from aka_tui.cli.from_args import accepted, load_suite


def register(actions: Any) -> None:
    p = actions.add_parser("rescore", help="score stored reports again under the suite's current weights",
                           description="Score stored `aka bench` report JSON(s) again with the suite's current "
                                       "weights; nothing is re-run. Several partial reports of one suite are merged, "
                                       "the first report winning per op. `aka bench --rescore REPORT...` is this "
                                       "subcommand.")
    p.add_argument("reports", nargs="+", metavar="REPORT", help="`aka bench` JSON report(s)")
    add_suite_flag(p)
    add_report_flags(p)
    add_accept_flags(p)
    p.set_defaults(func=cmd_bench_rescore)


def cmd_bench_rescore(args: argparse.Namespace) -> int:
    from aka_tui.bench.scoring.bench_report import merge_reports, rescore_report
    from aka_tui.bench.scoring.report import render_text, write_reports

    suite = load_suite(args)
    reports = []
    for path in args.reports:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
            from aka_tui.errors import EvaluationError

            raise EvaluationError(f"cannot read report {path}: {exc}") from None
        reports.append(rescore_report(data, suite))
    report = merge_reports(reports)  # several partial reports of one suite: later ones fill the missing ops
    if args.accept:
        report = rescored_with_acceptances(report, suite, args)
    stem = args.name or Path(args.reports[0]).stem + "-rescored"
    json_path, md_path = write_reports(report, Path(args.out), stem)
    print(render_text(report))
    print(f"wrote {json_path} and {md_path}")
    return 0


def rescored_with_acceptances(report: Any, suite: Any, args: argparse.Namespace) -> Any:
    """The report with `--accept` recorded in every result it names, scored again (each op on its profile)."""
    from aka_tui.bench.roofline.hardware import get_profile
    from aka_tui.bench.scoring.bench_report import launch_floor_s
    from aka_tui.bench.scoring.score import aggregate, score_op

    report.results = [accepted(r, args, per_op=True) for r in report.results]
    profiles = {report.hardware.name: report.hardware}

    def profile_of(result: Any) -> Any:
        name = str(result.provenance.get("hardware_profile") or report.hardware.name)
        if name not in profiles:
            profiles[name] = get_profile(name)
        return profiles[name]

    report.ops = [score_op(suite.problems[r.problem], r, profile_of(r), launch_floor_s(profile_of(r)))
                  for r in report.results if r.problem in suite.problems]
    report.aggregate = aggregate(report.ops)
    return report
