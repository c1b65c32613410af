"""`aka roofline PROBLEM`: count and cache W/Q per shape and print T_SOL; `--from-report`: import them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aka_tui.cli.from_args import find_problem, load_suite


def register(sub: Any) -> None:
    p = sub.add_parser("roofline", help="compute and cache W/Q per shape, print T_SOL",
                       description="Recount the semantic FLOPs and bytes of every shape of PROBLEM (running the "
                                   "reference once per shape), store them in roofline.json and print T_SOL.")
    p.add_argument("problem", nargs="?", help="problem name or directory")
    p.add_argument("--suite", help="suite directory")
    p.add_argument("--from-report", help="instead: import W/Q of every shape from an `aka bench` JSON report")
    p.add_argument("--tier", choices=["smoke", "full", "all"], default="all")
    p.add_argument("--device", default="auto", help="where to run the reference: meta (try first), cpu or cuda")
    p.add_argument("--hardware", help="profile for T_SOL (default: detected)")
    p.add_argument("--recount", action="store_true",
                   help="published directories: count every shape here too (their published W/Q are kept otherwise)")
    p.add_argument("--keep-within", type=float, metavar="PCT",
                   help="a recount within PCT%% of the stored W and Q keeps the stored entry (counted elsewhere, "
                        "e.g. on a GPU, whose random inputs gave slightly other counts); the file's inputs hash "
                        "is updated either way")
    p.set_defaults(func=cmd_roofline)


def cmd_roofline(args: argparse.Namespace) -> int:
    from aka_tui.bench.roofline.bound import bound
    from aka_tui.bench.roofline.hardware import detect_profile, get_profile
    from aka_tui.bench.roofline.refresh import refresh
    from aka_tui.bench.scoring.report import text_table

    if args.from_report:
        return _import_from_report(args)
    if not args.problem:
        from aka_tui.errors import ProblemNotFound

        raise ProblemNotFound("name the problem whose roofline to count (`aka roofline PROBLEM`, names from "
                              "`aka problems`), or import a report's with --from-report FILE")
    problem = find_problem(args, args.problem)
    profile = get_profile(args.hardware) if args.hardware else detect_profile("auto")
    published = problem.source_format != "native"
    # A published directory's W/Q are the data's: only what it leaves out is counted (--recount: all of it).
    kept: list[str] = []
    within = None if args.keep_within is None else max(0.0, args.keep_within) / 100
    counted = refresh(problem, args.device, args.tier, only_missing=published and not args.recount,
                      keep_within=within, kept=kept)
    devices = sorted({d for times in problem.published_sol_ms.values() for d in times})
    rows = []
    for shape in problem.shapes_for(args.tier):
        entry = problem.roofline.get(shape.shape_id)
        published_ms = problem.published_sol_ms.get(shape.shape_id, {})
        sol = [f"{published_ms[d] * 1e3:.2f}" if d in published_ms else "-" for d in devices]
        if entry is None:
            rows.append([shape.shape_id, "-", "-", "-", "-", "-", *sol])
            continue
        b = bound(entry, profile)
        rows.append([shape.shape_id, f"{entry.flops:.4g}", f"{entry.bytes_total:.4g}", f"{b.arithmetic_intensity:.3g}",
                     f"{b.t_sol_s * 1e6:.2f}", f"{b.bottleneck} ({entry.path}, {entry.source})", *sol])
    print(f"{problem.name}: roofline on {profile.name}" + (f"; {counted} shape(s) counted here" if counted else "")
          + (f", {len(kept)} kept as stored (within {args.keep_within:g}%): {', '.join(kept)}" if kept else ""))
    print(text_table(rows, ["shape", "W FLOP", "Q bytes", "FLOP/B", "T_SOL us", "bound",
                            *[f"published SOL us ({d})" for d in devices]]))
    if devices:
        print("published SOL times are the data's own figures for those devices, shown for comparison; "
              "S always uses T_SOL on the profile above")
    if published:
        from aka_tui.bench.problem.atrex import counted_cache_path
        from aka_tui.bench.problem.native import roofline_inputs_hash

        print(f"W/Q: {problem.roofline_path} (published); counted entries: "
              f"{counted_cache_path(problem.name, roofline_inputs_hash(problem.directory))}")
    else:
        print(f"cache: {problem.roofline_path}")
    return 0


def _import_from_report(args: argparse.Namespace) -> int:
    """`--from-report`: W/Q of every shape of the suite taken from a stored `aka bench` report."""
    from aka_tui.bench.roofline.refresh import import_from_report

    suite = load_suite(args)
    try:
        report = json.loads(Path(args.from_report).read_text())
    except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
        from aka_tui.errors import EvaluationError

        raise EvaluationError(f"cannot read report {args.from_report}: {exc}") from None
    imported = import_from_report(suite.problems, report)
    print(", ".join(f"{k}: {v}" for k, v in sorted(imported.items())) or "nothing imported (problem hashes differ?)")
    return 0
