"""Flags several commands share: the suite, where and how candidates are evaluated, accepting a held verdict,
the executor and the report files. Each command's module adds its own flags beside these."""

from __future__ import annotations

import argparse

from aka_tui.argtypes import add_sandbox_flags, fraction, int_at_least, positive_float
from aka_tui.bench.measure.attribution import DEFAULT_OWN_SHARE_THRESHOLD
from aka_tui.bench.measure.job import DEFAULT_CASES


def add_suite_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", help="suite directory (default: the shipped problems/)")


def add_device_flags(p: argparse.ArgumentParser, tier_help: str = "default: smoke on CPU, full on GPU") -> None:
    """--tier, --device and --hardware: which shapes, where, scored against which roofline."""
    p.add_argument("--tier", choices=["smoke", "full", "all"], help=f"shape tier ({tier_help})")
    p.add_argument("--device", default="auto", help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--hardware", help="roofline profile name (default: detected); see `aka hw list`")


def add_eval_flags(p: argparse.ArgumentParser, accept: bool = True) -> None:
    """The evaluator's options (`aka eval`, `aka bench run`, `aka bench illusion`); `accept`: also --accept."""
    add_suite_flag(p)
    add_device_flags(p)
    p.add_argument("--measured", action="store_true", help="score against the calibrated profile of this GPU")
    p.add_argument("--cases", type=int_at_least(1), default=DEFAULT_CASES,
                   help=f"seeded correctness cases per shape (default {DEFAULT_CASES})")
    p.add_argument("--shape-timeout", type=positive_float, default=300.0,
                   help="seconds allowed per shape before the worker is killed")
    add_sandbox_flags(p)
    p.add_argument("--compare-eager", action="store_true", help="also time the eager reference (speed-up, fast_1)")
    p.add_argument("--compare-compile", action="store_true", help="also time torch.compile of the reference")
    p.add_argument("--compare-compile-max-autotune", dest="compare_compile_max", action="store_true",
                   help="also time torch.compile(mode='max-autotune') of the reference (GEMM templates benchmarked "
                        "on the GPU while compiling; on the CPU it keeps the ATen GEMM)")
    p.add_argument("--own-share", type=fraction(low_open=True), default=DEFAULT_OWN_SHARE_THRESHOLD,
                   help="device-time share of the candidate's own kernels needed to count as real "
                        f"(GPU; default {DEFAULT_OWN_SHARE_THRESHOLD})")
    if accept:
        add_accept_flags(p)
    p.add_argument("--no-timed-verification", action="store_true",
                   help="do not check the timed calls (outputs, launches, device time): to measure what the checks cost")


def add_accept_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accept", action="append", metavar="KIND[=TARGET]",
                   help="accept a held verdict, recorded in the result: suspicious, or over_roofline=SHAPE "
                        "(aka bench: KIND=OP[:SHAPE]); repeatable, needs --accept-reason")
    p.add_argument("--accept-reason", metavar="TEXT", help="why the held verdict is accepted (recorded)")


def add_executor_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="where evaluations run: local (one slot per visible GPU) or a Ray cluster")
    p.add_argument("--gpus", type=int_at_least(1), help="local executor: use the first N visible GPUs (default: all)")
    p.add_argument("--cpu-workers", type=int_at_least(1), default=1,
                   help="local executor on the CPU: parallel workers")
    p.add_argument("--ray-address", default=None, help="with --executor ray: auto or HOST:PORT (default auto)")


def add_report_flags(p: argparse.ArgumentParser, name: bool = True) -> None:
    """--out (and --name): where the JSON and Markdown reports go."""
    p.add_argument("--out", default="reports", help="directory for the JSON and Markdown reports (default reports/)")
    if name:
        p.add_argument("--name", help="report file stem")
