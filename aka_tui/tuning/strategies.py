"""The sweep's search strategies over a kernel's SEARCH_SPACE, for one shape at a time.

Each strategy calls `measure(config)` for the configurations it wants (the sweeper caches, replays, budgets
and records them; it raises to end the search when the budget is spent) and returns why it stopped on its own.
`coordinate` starts from the default TUNABLES and changes one tunable at a time: both neighbours in its
SEARCH_SPACE list, then onwards in the better direction while it keeps winning (`trials.better`), in passes
until one changes nothing. `grid` runs the default, then the full product of the space in a seeded order, a
sample of it when it is larger than the budget.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable

from aka_tui.tuning.trials import Trial, better

Measure = Callable[[dict[str, Any]], Trial]


def coordinate(measure: Measure, default: dict[str, Any], space: dict[str, list[Any]]) -> str:
    """Coordinate descent from `default`; returns the stop reason once a whole pass changed nothing."""
    incumbent = measure(default)
    params = [p for p, values in space.items() if len(values) > 1]
    changed = True
    while changed:
        changed = False
        for param in params:
            winner = line_search(measure, space[param], param, incumbent)
            if winner is not incumbent:
                incumbent, changed = winner, True
    return "converged"


def line_search(measure: Measure, values: list[Any], param: str, incumbent: Trial) -> Trial:
    """The best trial along one tunable from the incumbent (the incumbent itself when no neighbour wins)."""
    current = incumbent.config.get(param)
    if current not in values:  # a value outside the (overridden) space: try every value once
        best = incumbent
        for value in values:
            trial = measure({**incumbent.config, param: value})
            if better(trial, best):
                best = trial
        return best
    i = values.index(current)
    best, direction = incumbent, 0
    for step in (-1, 1):
        if 0 <= i + step < len(values):
            trial = measure({**incumbent.config, param: values[i + step]})
            if better(trial, best):
                best, direction = trial, step
    if direction == 0:
        return incumbent
    j = i + direction
    while 0 <= j + direction < len(values):
        j += direction
        trial = measure({**incumbent.config, param: values[j]})
        if not better(trial, best):
            break
        best = trial
    return best


def grid_points(space: dict[str, list[Any]], default: dict[str, Any], max_configs: int,
                seed: int) -> list[dict[str, Any]]:
    """The default, then the product of the space in a seeded order (a sample of it when it is large)."""
    params = list(space)
    sizes = [len(space[p]) for p in params]
    total = math.prod(sizes)
    wanted = min(total, 4 * max_configs + 8)
    rng = random.Random(seed)
    indices = rng.sample(range(total), wanted) if total > wanted else rng.sample(range(total), total)
    points = [dict(default)]
    for flat in indices:
        point = {}
        for param, size in zip(reversed(params), reversed(sizes)):
            flat, digit = divmod(flat, size)
            point[param] = space[param][digit]
        point = {p: point[p] for p in params}
        point = {**default, **point}
        if point != points[0]:
            points.append(point)
    return points


def grid(measure: Measure, points: list[dict[str, Any]]) -> str:
    """Every point in order; returns the stop reason once all of them ran."""
    for point in points:
        measure(point)
    return "space exhausted"
