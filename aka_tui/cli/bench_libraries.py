"""`aka bench libraries [DIR]`: DIR's kernels timed side by side with the vendor libraries on the same problems
(torch.matmul, torch._scaled_mm, scaled_dot_product_attention) and, where it is installed, the Liger-Kernel peer
(rms_norm, fused_add_rms_norm, layer_norm, silu_and_mul, rope); docs/scoring.md."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aka_tui.argtypes import add_sandbox_flags, int_at_least
from aka_tui.cli.arguments import add_device_flags, add_report_flags, add_suite_flag
from aka_tui.cli.from_args import load_suite, suite_dir
from aka_tui.cli.output import scrub

DEFAULT_CANDIDATES = "kb/family"


def register(actions: Any) -> None:
    p = actions.add_parser("libraries", help="time DIR's kernels side by side with torch.matmul, _scaled_mm, SDPA",
                           description="The candidates of DIR (default kb/family) against torch.matmul, "
                                       "torch._scaled_mm and scaled_dot_product_attention on the same problems, "
                                       "and against Liger-Kernel on rms_norm, fused_add_rms_norm, layer_norm, "
                                       "silu_and_mul and rope where liger-kernel is installed (pip install "
                                       "liger-kernel==0.8.5, or the `peers` extra), timed side by side, device "
                                       "time and end to end (needs a CUDA GPU; --device cpu --tier smoke is a "
                                       "dry-run); docs/scoring.md. `aka bench --library-compare [DIR]` is this "
                                       "subcommand.")
    p.add_argument("candidates", nargs="?", default=DEFAULT_CANDIDATES, metavar="DIR",
                   help=f"directory with <op>.py or <op>/*.py candidate files (default {DEFAULT_CANDIDATES})")
    add_suite_flag(p)
    p.add_argument("--ops", help="comma-separated subset of problems")
    p.add_argument("--shapes", default="largest,weighted",
                   help="comma-separated largest (by FLOPs), weighted (weight > 0), all (default largest,weighted)")
    p.add_argument("--rounds", type=int_at_least(1), default=3,
                   help="interleaved timing rounds per side (default 3; median of rounds)")
    add_device_flags(p, tier_help="default full; smoke with --device cpu is the dry-run")
    add_sandbox_flags(p)
    add_report_flags(p)
    p.set_defaults(func=cmd_bench_libraries)


def cmd_bench_libraries(args: argparse.Namespace) -> int:
    # Nothing here imports triton before resolve_run_device: a CPU dry-run must switch on its interpreter first.
    from aka_tui.bench.compare.library import render, run
    from aka_tui.bench.sandbox.bwrap import resolve_mode

    device, tier = run.resolve_run_device(args.device, args.tier)  # the CPU only as an explicit smoke dry-run
    shape_sets = run.parse_shape_sets(args.shapes)
    stem = args.name or f"library-compare-{tier}"
    if resolve_mode(args.sandbox)[0] == "bwrap":  # the candidates are imported in-process: run all of it inside
        return _sandboxed(args, device, tier, stem)
    suite = load_suite(args)
    partial = Path(args.out) / f"{stem}.partial.json"

    def checkpoint(report_so_far: Any) -> None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(scrub(json.dumps(report_so_far.to_json(), default=str)) + "\n")

    report = run.run_library_compare(suite, device, tier, ops=args.ops.split(",") if args.ops else None,
                                     shape_sets=shape_sets, candidates_dir=Path(args.candidates),
                                     rounds=args.rounds, hardware=args.hardware, checkpoint=checkpoint)
    json_path, md_path = render.write_reports(report, Path(args.out), stem)
    partial.unlink(missing_ok=True)
    print(render.render_text(report))
    print(f"wrote {json_path} and {md_path}")
    return 0 if not report.errors else 1


def _sandboxed(args: argparse.Namespace, device: str, tier: str, stem: str) -> int:
    """The library comparison as a sandboxed `aka` command: the suite, the candidates and the measured hardware
    profiles read-only, its reports copied (scrubbed) into --out."""
    from dataclasses import replace

    from aka_tui.bench.evaluator.isolation import WorkerLimits
    from aka_tui.bench.sandbox.bwrap import package_dir
    from aka_tui.bench.sandbox.command import run_sandboxed_command
    from aka_tui.paths import aka_home

    candidates = Path(args.candidates)
    if not candidates.is_absolute() and not candidates.is_dir() and (package_dir().parent / candidates).is_dir():
        candidates = package_dir().parent / candidates  # `kb/family` from outside the checkout
    candidates, suite = candidates.resolve(), suite_dir(args).resolve()
    child = ["bench", "libraries", str(candidates), "--suite", str(suite), "--device", device,
             "--tier", tier, "--shapes", args.shapes, "--rounds", str(args.rounds), "--out", "{OUT}", "--name", stem]
    child += ["--ops", args.ops] if args.ops else []
    child += ["--hardware", args.hardware] if args.hardware else []
    limits = WorkerLimits(memory_bytes=int(args.memory_limit * (1 << 30))) if args.memory_limit else WorkerLimits()
    read_only = [candidates, suite] + ([aka_home() / "hardware"] if (aka_home() / "hardware").is_dir() else [])
    return run_sandboxed_command(child, read_only, Path(args.out), device.startswith("cuda"),
                                 replace(limits.resources(1), cpu_s=None), args.sandbox)
