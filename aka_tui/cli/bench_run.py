"""`aka bench run`: a candidate set or a baseline over the suite, scored per op and aggregated into S_agg."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aka_tui.argtypes import int_at_least
from aka_tui.bench.measure.job import BASELINE_KINDS
from aka_tui.cli.arguments import add_eval_flags, add_executor_flags, add_report_flags
from aka_tui.cli.bench_rescore import rescored_with_acceptances
from aka_tui.cli.from_args import eval_options, load_suite, make_executor
from aka_tui.cli.output import Progress, sandbox_line, scrub


def register(actions: Any) -> None:
    p = actions.add_parser("run", help="score a candidate set or a baseline over the suite (the default)",
                           description="Evaluate every problem of the suite and print per-op S and S_agg; "
                                       "writes JSON and Markdown reports. `aka bench --candidates DIR ...` and "
                                       "`aka bench --baseline KIND ...` are this subcommand.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", choices=list(BASELINE_KINDS),
                       help="score the reference itself (eager, torch.compile, or torch.compile in "
                            "max-autotune mode without CUDA graphs)")
    which.add_argument("--candidates", help="directory with <op>.py or <op>/*.py candidate files")
    p.add_argument("--ops", help="comma-separated subset of problems")
    p.add_argument("--naive", action="store_true",
                   help="also run the naive check (one input, allclose 1e-2, nothing else) on every candidate and "
                        "record its verdict per shape: the paper table's naive pass rate (never scored)")
    p.add_argument("--precompile-workers", type=int_at_least(0), default=0,
                   help="with --baseline compile or --compare-compile: compile the reference for every shape "
                        "first in N parallel processes (warms inductor's caches for the timed run; nothing is "
                        "timed meanwhile). Not for max-autotune, which benchmarks GEMM choices while compiling")
    add_executor_flags(p)
    add_report_flags(p)
    add_eval_flags(p)
    p.set_defaults(func=cmd_bench_run)


def cmd_bench_run(args: argparse.Namespace) -> int:
    from aka_tui.bench.evaluator.evaluate import resolve_device, resolve_tier
    from aka_tui.bench.scoring.report import render_text, write_reports
    from aka_tui.executors.suite import precompiled_cache, run_bench

    suite = load_suite(args)
    options = eval_options(args)
    if args.precompile_workers and not precompiled_cache(args.baseline, options):
        print("note: --precompile-workers warms torch.compile's default mode only (--baseline compile or "
              "--compare-compile); max-autotune benchmarks GEMM choices while compiling, which parallel "
              "compiles would disturb", file=sys.stderr)
    ops = args.ops.split(",") if args.ops else None
    executor = make_executor(args)
    tier = resolve_tier(options, executor.device if executor.remote else resolve_device(options.device))
    selected = [suite.problems[o] for o in ops if o in suite.problems] if ops else list(suite.problems.values())
    progress = Progress(sum(p.tier_size(tier) for p in selected))
    stem = args.name or (f"bench-{args.baseline}" if args.baseline else "bench-candidates") + f"-{tier}"
    partial = Path(args.out) / f"{stem}.partial.json"

    def checkpoint(report_so_far: Any) -> None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(scrub(json.dumps(report_so_far.to_json())) + "\n")

    report = run_bench(suite, options, baseline=args.baseline,
                       candidates_dir=Path(args.candidates) if args.candidates else None, ops=ops, progress=progress,
                       checkpoint=checkpoint, precompile_workers=args.precompile_workers,
                       executor=executor, naive=bool(args.naive))
    progress.finish()
    partial.unlink(missing_ok=True)
    if args.accept:
        report = rescored_with_acceptances(report, suite, args)
    json_path, md_path = write_reports(report, Path(args.out), stem)
    print(render_text(report))
    print(sandbox_line(report.results))
    print(f"wrote {json_path} and {md_path}")
    return 0
