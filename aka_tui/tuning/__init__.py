"""Tuning aids around the benchmark: `aka kb sweep` times a KB reference kernel's tunables at chosen shapes.

Imports the benchmark core and the knowledge base's plain-file parts only (torch, triton, numpy): it runs on
a GPU server from a checkout with `PYTHONPATH=.`, like `aka bench`. This module stays light (the CLI parser
imports it); the sweep itself is `aka_tui.tuning.sweep`.
"""

from __future__ import annotations

from typing import Any

from aka_tui.errors import AkaError

STRATEGIES = ("coordinate", "grid")
DEFAULT_MAX_CONFIGS = 24


class SweepError(AkaError):
    """`aka kb sweep` cannot start: unknown op, op without a KB kernel, unknown shape, bad option."""

    title = "sweep error"


def describe_changes(changed: dict[str, Any]) -> str:
    """`NAME=value ...` of the tunables that differ from the default ('default' when none do)."""
    return " ".join(f"{k}={v}" for k, v in changed.items()) or "default"


def fmt_us(ms: float | None) -> str:
    """Milliseconds as microseconds: 4 significant digits, whole numbers from 1000 us on."""
    if ms is None:
        return "-"
    us = ms * 1e3
    return f"{us:.0f}" if us >= 1000 else f"{us:.4g}"
