"""Which shapes a sweep times: `--shapes` keywords (weighted, largest, all) and shape ids, resolved on a problem.

`largest` is the tier's shape with the longest time at the speed of light on the given hardware profile, so it
needs the problem's cached roofline; an id may name any tier's shape or a fuzzed one as `aka eval` prints it.
"""

from __future__ import annotations

from aka_tui.bench.problem.fuzz import resolve_shape
from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.tuning import SweepError


def select_shapes(problem: Problem, spec: str, tier: str, profile: HardwareProfile) -> list[Shape]:
    """Shapes named by `spec`: comma-separated keywords (weighted, largest, all) and/or shape ids.

    weighted: the tier's shapes that carry score weight, heaviest first; largest: the tier's shape with the
    longest T_SOL on `profile` (most bytes or FLOPs); all: every shape of the tier; an id: that shape (any
    tier, or a fuzz id as printed by `aka eval`).
    """
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    if not tokens:
        raise SweepError("--shapes is empty: use weighted, largest, all or shape ids (comma-separated)")
    pool = problem.shapes_for(tier)
    chosen: list[Shape] = []
    for token in tokens:
        for shape in _shapes_of(problem, token, pool, tier, profile):
            if shape.shape_id not in {s.shape_id for s in chosen}:
                chosen.append(shape)
    if not chosen:
        tiers = sorted({s.tier for s in problem.shapes.values()})
        raise SweepError(f"{problem.name}: --shapes {spec!r} selects no {tier!r} shape (tiers: {', '.join(tiers)})")
    return chosen


def _shapes_of(problem: Problem, token: str, pool: list[Shape], tier: str, profile: HardwareProfile) -> list[Shape]:
    """The shapes one keyword or id of `--shapes` names."""
    if token == "all":
        return list(pool)
    if token == "weighted":
        return sorted((s for s in pool if s.weight > 0), key=lambda s: -s.weight)
    if token == "largest":
        sized = [(bound(problem.roofline[s.shape_id], profile).t_sol_s, s) for s in pool if s.shape_id in problem.roofline]
        if not sized:
            raise SweepError(f"{problem.name}: no cached roofline for its {tier} shapes, so 'largest' is unknown "
                             f"(run `aka roofline {problem.name}`)")
        return [max(sized, key=lambda pair: pair[0])[1]]
    shape = resolve_shape(problem, token)
    if shape is None:
        raise SweepError(f"{problem.name} has no shape {token!r}; known: {', '.join(problem.shapes)}")
    return [shape]
