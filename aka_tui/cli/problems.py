"""`aka problems`: the suite's problems, by weight."""

from __future__ import annotations

import argparse
from typing import Any

from aka_tui.cli.arguments import add_suite_flag
from aka_tui.cli.from_args import load_suite


def register(sub: Any) -> None:
    p = sub.add_parser("problems", help="list the benchmark suite", description="List the problems of a suite.")
    add_suite_flag(p)
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.set_defaults(func=cmd_problems)


def cmd_problems(args: argparse.Namespace) -> int:
    from aka_tui.bench.problem.dtypes import dtype_name
    from aka_tui.bench.scoring.report import text_table

    suite = load_suite(args)
    rows = []
    for p in sorted(suite.problems.values(), key=lambda p: (-p.importance, p.name)):
        tiers = {t: p.tier_size(t) for t in ("smoke", "full")}
        rows.append([p.name, p.family, dtype_name(p.dtype), f"{p.importance * 100:.1f}",
                     str(tiers["smoke"]), str(tiers["full"]), p.source_format])
    headers = ["op", "family", "dtype", "weight %", "smoke", "full", "format"]
    if args.markdown:
        print("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
        return 0 if not suite.errors else 1
    print(text_table(rows, headers))
    print(f"{len(rows)} problems in {suite.directory}")
    return 0 if not suite.errors else 1
