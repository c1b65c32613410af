"""The `aka` argument parser: one module per command registers its own (light: the engine is imported inside the
commands that need it)."""

from __future__ import annotations

import argparse

from aka_tui import __version__
from aka_tui.argtypes import OneLineParser
from aka_tui.cli import bench_parser, evaluate, hw, problems, report, roofline
from aka_tui.cli.bench_legacy import LegacyFormError, rewrite_bench_argv


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="aka", description="Turn PyTorch operators into fast GPU kernels, scored against the hardware roofline.")
    parser.add_argument("--version", action="version", version=f"aka-tui {__version__}")
    parser.add_argument("--suite", dest="app_suite", metavar="DIR",
                        help="with no command: open the app on this suite (default: the shipped problems/)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (problems, evaluate, bench_parser, report, roofline, hw):
        module.register(sub)

    from aka_tui.agent.commands import register as register_optimize
    from aka_tui.knowledge.commands import register as register_kb
    from aka_tui.trace.commands import register as register_trace
    from aka_tui.tuning.commands import register as register_sweep

    register_sweep(register_kb(sub))  # `aka kb sweep` lives in aka_tui.tuning (it needs the benchmark core)
    register_optimize(sub)
    register_trace(sub)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """argv parsed, `aka bench`'s old flag forms first rewritten onto its subcommands (bench_legacy.py)."""
    try:
        argv = rewrite_bench_argv(argv)
    except LegacyFormError as exc:
        OneLineParser(prog=f"{parser.prog} bench").error(str(exc))  # one line, exit status 2
    return parser.parse_args(argv)
