"""Command-line value checks: a bad number is refused with one line naming the option, before anything runs."""

from __future__ import annotations

import argparse
import math
from typing import Callable


def _number(text: str, kind: type) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer ≥ minimum."""

    def check(text: str) -> int:
        value = int(_number(text, int))
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value

    check.__name__ = f"integer >= {minimum}"
    return check


def positive_float(text: str) -> float:
    """A number > 0 (timeouts, budgets, limits)."""
    value = float(_number(text, float))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not positive")
    return value


def non_negative_float(text: str) -> float:
    """A number ≥ 0."""
    value = float(_number(text, float))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def fraction(low_open: bool = False, high_open: bool = False) -> Callable[[str], float]:
    """A number in [0, 1] (with either end excluded on request)."""

    def check(text: str) -> float:
        value = float(_number(text, float))
        if value < 0 or value > 1 or (low_open and value == 0) or (high_open and value == 1):
            bounds = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
            raise argparse.ArgumentTypeError(f"{text} is outside {bounds}")
        return value

    check.__name__ = "fraction"
    return check


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the option, what is wrong, where help is)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def add_sandbox_flags(p: argparse.ArgumentParser) -> None:
    """--sandbox and --memory-limit: how candidate processes are contained (docs/evaluator.md)."""
    p.add_argument("--sandbox", choices=["auto", "bwrap", "none"],
                   help="how candidate processes are contained: bwrap (bubblewrap: no network, no secrets, a "
                        "read-only system, one private work dir), none (limits only; recorded as `sandbox: none`), "
                        "auto (bwrap where it runs; the default, or $AKA_SANDBOX)")
    p.add_argument("--memory-limit", type=positive_float, metavar="GIB",
                   help="resident memory of a candidate's process tree, in GiB (default 16, or half the RAM)")
