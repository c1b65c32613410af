"""`aka bench illusion DIR`: the correctness illusion — pass rates of DIR's candidates under a naive check, under
the hardened evaluator, and as real kernels."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aka_tui.cli.arguments import add_eval_flags, add_report_flags
from aka_tui.cli.from_args import eval_options, load_suite
from aka_tui.cli.output import scrub


def register(actions: Any) -> None:
    p = actions.add_parser("illusion", help="pass rates: naive check vs the hardened one vs real kernels",
                           description="Evaluate every candidate of DIR twice, with a naive check (one input, "
                                       "allclose) and with the hardened evaluator, and report the pass rates under "
                                       "each and the share of real kernels; writes illusion.json and illusion.md. "
                                       "`aka bench --candidates DIR --report illusion` is this subcommand.")
    p.add_argument("candidates", metavar="DIR", help="directory with <op>.py or <op>/*.py candidate files")
    add_report_flags(p, name=False)
    add_eval_flags(p, accept=False)
    p.set_defaults(func=cmd_bench_illusion)


def cmd_bench_illusion(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from aka_tui.bench.compare.illusion import render_illusion, run_illusion

    report = run_illusion(load_suite(args), Path(args.candidates), eval_options(args),
                          progress=lambda op, name: print(f"  {op}: {name}", file=sys.stderr))
    text = render_illusion(report)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "illusion.json").write_text(scrub(json.dumps([asdict(r) for r in report.rows], indent=1)) + "\n")
    (out / "illusion.md").write_text(scrub("```\n" + text + "\n```\n"))
    print(f"wrote {out / 'illusion.json'} and {out / 'illusion.md'}")
    return 0
