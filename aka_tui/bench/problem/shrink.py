"""Shrink a shape for the CPU interpreter: halve integer arguments until its inputs fit a byte budget.

Published suites have no smoke tier, and some operators' smallest production shape is hundreds of MB
(every expert's weights) — minutes of float64 work on a 2-core machine. The shrunk shape keeps the
reference's semantics (the same code on smaller tensors) and its id (`smoke.<key>=<value>,...@<shape>`)
rebuilds it, so it replays.
Sizes are estimated by building the inputs on the meta device: no memory, no data.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from aka_tui.bench.problem.fuzz import override_shape, resolve_shape
from aka_tui.bench.problem.model import Problem, Shape

CPU_INPUT_BUDGET_BYTES = 8 << 20
MAX_STEPS = 48


def input_bytes(problem: Problem, input_module: ModuleType, shape: Shape) -> int | None:
    """Bytes of the shape's inputs, built on the meta device; None when the input maker cannot run there."""
    from aka_tui.bench.problem.inputs import make_inputs

    try:
        inputs = make_inputs(problem, input_module, shape, "meta", 0)
    except Exception:  # data-dependent input makers need real tensors: no estimate
        return None
    return sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))


def _integer_kwargs(shape: Shape) -> dict[str, int]:
    merged: dict[str, Any] = {**shape.init_kwargs, **shape.input_kwargs}
    return {k: v for k, v in merged.items() if isinstance(v, int) and not isinstance(v, bool) and v > 1}


def _varying_keys(problem: Problem) -> set[str]:
    """Integer kwargs the published shapes themselves vary: shrinking those first stays inside the data."""
    values: dict[str, set[Any]] = {}
    for shape in problem.shapes.values():
        for key, value in {**shape.init_kwargs, **shape.input_kwargs}.items():
            if isinstance(value, int) and not isinstance(value, bool):
                values.setdefault(key, set()).add(value)
    return {k for k, v in values.items() if len(v) > 1}


def shrink_shape(problem: Problem, input_module: ModuleType, shape: Shape,
                 budget_bytes: int = CPU_INPUT_BUDGET_BYTES) -> Shape:
    """The shape itself when its inputs fit the budget (or cannot be sized), else a smaller fuzz-id shape:
    greedily halve the integer argument whose halving shrinks the inputs most (arguments the data varies
    first), until they fit or nothing shrinks."""
    size = input_bytes(problem, input_module, shape)
    if size is None or size <= budget_bytes:
        return shape
    varying = _varying_keys(problem)
    values: dict[str, int] = {}
    current = shape
    for _ in range(MAX_STEPS):
        best: tuple[int, int, dict[str, int], Shape] | None = None  # (rank, bytes, values, shape)
        for key, value in _integer_kwargs(current).items():
            trial_values = {**values, key: value // 2}
            trial = override_shape(shape, trial_values, "smoke")
            trial_size = input_bytes(problem, input_module, trial)
            if trial_size is None or trial_size >= size:
                continue
            worthwhile = key in varying and trial_size <= 0.9 * size
            rank = 0 if worthwhile else 1
            if best is None or (rank, trial_size) < (best[0], best[1]):
                best = (rank, trial_size, trial_values, trial)
        if best is None:
            break
        _, size, values, current = best
        if size <= budget_bytes:
            break
    return (resolve_shape(problem, current.shape_id) or shape) if values else shape
