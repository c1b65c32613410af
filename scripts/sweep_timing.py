"""Timing shared by the device sweep scripts: every configuration is called once first (compiles, warms the GPU),
then all are timed in shuffled rounds and the median of each is kept. Timed once each in a fixed order, whichever
ran first on a cold GPU read 10-18% slow (H200, 2026-12-03), and a sweep's first row is its default."""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable


def add_sweep_options(parser: argparse.ArgumentParser, rep: int, rounds: int) -> None:
    """The options every sweep takes: --grid KEY=V1,V2 (repeatable), --rep (do_bench ms), --rounds."""
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help="one tunable's values in the grid (repeatable; ints, or True/False)")
    parser.add_argument("--rep", type=int, default=rep, help="do_bench milliseconds per configuration")
    parser.add_argument("--rounds", type=int, default=rounds, help="shuffled rounds; the median is reported")


def grid_with(grid: dict[str, list], items: list[str]) -> dict[str, list]:
    """`grid` with each --grid KEY=V1,V2 item's values in place of (or beside) its own."""
    grid = dict(grid)
    for item in items:
        key, _, values = item.partition("=")
        grid[key] = [v == "True" if v in ("True", "False") else int(v) for v in values.split(",")]
    return grid


def warm(entries: dict[str, Callable[[], object]], report: Callable[[str, Exception], None]) -> dict[str, object]:
    """Call every entry once; returns each one's output. An entry that raises (a configuration that does not
    launch) is reported and removed from `entries`."""
    outputs = {}
    for label, call in list(entries.items()):
        try:
            outputs[label] = call()
        except Exception as exc:
            report(label, exc)
            del entries[label]
    return outputs


def median_times(entries: dict[str, Callable[[], object]], bench: Callable[[Callable[[], object]], float],
                 rounds: int) -> dict[str, float]:
    """Each entry's median of `rounds` timings (`bench(call)`), the entries in a new shuffled order each round."""
    times: dict[str, list[float]] = {label: [] for label in entries}
    order = list(entries)
    for round_ in range(rounds):
        random.Random(round_).shuffle(order)
        for label in order:
            times[label].append(bench(entries[label]))
    return {label: statistics.median(t) for label, t in times.items()}


def not_launched(label: str, exc: Exception) -> None:
    print(f"  {label}: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}")
