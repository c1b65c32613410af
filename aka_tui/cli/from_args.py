"""The engine's objects built from parsed flags: the suite, a problem, evaluation options, the executor, and
`--accept` applied to a result. The engine is imported inside each function (the parser stays light)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def suite_dir(args: argparse.Namespace) -> Path:
    if args.suite:
        return Path(args.suite)
    from aka_tui.bench.problem.lookup import default_suite_dir

    return default_suite_dir()


def load_suite(args: argparse.Namespace) -> Any:
    """The suite of --suite; problems that do not load are skipped with a warning each."""
    from aka_tui.bench.problem.lookup import load_suite as load

    suite = load(suite_dir(args))
    for name, error in suite.errors.items():
        print(f"warning: skipping problem {name}: {error}", file=sys.stderr)
    return suite


def find_problem(args: argparse.Namespace, name: str) -> Any:
    from aka_tui.bench.problem.lookup import find_problem as find

    return find(name, args.suite)


def make_executor(args: argparse.Namespace) -> Any:
    from aka_tui.executors.base import make_executor as make

    return make(args.executor, args.device, args.gpus, args.cpu_workers, args.ray_address)


def eval_options(args: argparse.Namespace) -> Any:
    """EvalOptions from the flags of arguments.add_eval_flags (the optional ones read with getattr)."""
    from aka_tui.bench.evaluator.evaluate import EvalOptions
    from aka_tui.bench.evaluator.isolation import WorkerLimits

    limits = WorkerLimits(per_shape_s=args.shape_timeout, sandbox=args.sandbox)
    if args.memory_limit is not None:
        limits.memory_bytes = int(args.memory_limit * (1 << 30))
    return EvalOptions(
        device=args.device, tier=args.tier, cases=args.cases, hardware=args.hardware, measured=args.measured,
        compare_eager=getattr(args, "compare_eager", False), compare_compile=getattr(args, "compare_compile", False),
        compare_compile_max=getattr(args, "compare_compile_max", False),
        limits=limits, own_share_threshold=args.own_share,
        verify_timed=not getattr(args, "no_timed_verification", False),
    )


def accepted(result: Any, args: argparse.Namespace, per_op: bool = False) -> Any:
    """`--accept KIND[=TARGET]` recorded in the result (who, when, why, which file)."""
    from aka_tui.bench.measure.acceptance import apply_cli

    return apply_cli(result, getattr(args, "accept", None) or [], getattr(args, "accept_reason", None) or "", per_op)
