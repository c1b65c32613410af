"""Seeded shape fuzzing inside a problem's declared domain: tails, non-powers of two, one row, the largest size.

A fuzzed shape changes integer kwargs of a base shape; its id (`fuzz.<key>=<value>[,<key>=<value>]@<base
shape>`) is enough to rebuild it, so `aka eval --shape <id> --replay-seed <seed>` replays any failure.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any

from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.problem.seeds import derive_seed

_ASSIGNMENT = r"[A-Za-z_][A-Za-z0-9_]*=-?\d+"
# `fuzz.` shapes are correctness-only extras; `smoke.` shapes (a published shape shrunk for the CPU
# interpreter, see shrink.py) are evaluated and scored like the shape they come from.
FUZZ_ID_RE = re.compile(rf"^(fuzz|smoke)\.({_ASSIGNMENT}(?:,{_ASSIGNMENT})*)@(.+)$")
CPU_GROWTH = 4  # on the interpreter, fuzzed sizes stay within 4x the base shape's


def fuzz_shape_id(key: str, value: int, base_id: str) -> str:
    return f"fuzz.{key}={value}@{base_id}"


def override_shape(base: Shape, values: dict[str, int], prefix: str = "fuzz") -> Shape:
    """The base shape with several integer kwargs replaced (keys shared by init and input change together)."""
    init, inputs = dict(base.init_kwargs), dict(base.input_kwargs)
    for key, value in values.items():
        if key in init:
            init[key] = value
        if key in inputs:
            inputs[key] = value
    assignments = ",".join(f"{k}={v}" for k, v in values.items())
    return replace(base, shape_id=f"{prefix}.{assignments}@{base.shape_id}", init_kwargs=init, input_kwargs=inputs,
                   weight=0.0, note=f"{assignments} from {base.shape_id}")


def is_fuzz_id(shape_id: str) -> bool:
    return shape_id.startswith("fuzz.")


def _with_value(base: Shape, key: str, value: int) -> Shape:
    init = dict(base.init_kwargs)
    inputs = dict(base.input_kwargs)
    if key in init:
        init[key] = value
    if key in inputs:
        inputs[key] = value
    return replace(base, shape_id=fuzz_shape_id(key, value, base.shape_id), init_kwargs=init, input_kwargs=inputs,
                   weight=0.0, note=f"fuzzed {key}={value} from {base.shape_id}")


def resolve_shape(problem: Problem, shape_id: str) -> Shape | None:
    """A shape of the problem, or the fuzzed shape a fuzz id describes (None if neither, or if the fuzzed
    value is outside the problem's declared domain: see `domain_error`)."""
    if shape_id in problem.shapes:
        return problem.shapes[shape_id]
    match = FUZZ_ID_RE.match(shape_id)
    if not match or domain_error(problem, shape_id):
        return None
    prefix, assignments, base_id = match.group(1), match.group(2), match.group(3)
    base = problem.shapes.get(base_id)
    if base is None:
        return None
    values = _parse_assignments(assignments)
    if any(key not in base.init_kwargs and key not in base.input_kwargs for key in values):
        return None
    if len(values) == 1 and prefix == "fuzz":
        (key, value), = values.items()
        return _with_value(base, key, value)
    return override_shape(base, values, prefix)


def _parse_assignments(assignments: str) -> dict[str, int]:
    return {key: int(value) for key, value in (a.split("=") for a in assignments.split(","))}


def domain_error(problem: Problem, shape_id: str) -> str:
    """Why a fuzz id asks for a value outside the problem's declared fuzz domain ('' when it does not); a
    `smoke.` id (a published shape shrunk for the interpreter) may only lower its base shape's values."""
    match = FUZZ_ID_RE.match(shape_id)
    if not match:
        return ""
    prefix, values, base_id = match.group(1), _parse_assignments(match.group(2)), match.group(3)
    if prefix == "smoke":
        base = problem.shapes.get(base_id)
        for key, value in values.items():
            original = _base_value(base, key) if base is not None else None
            if not isinstance(original, int) or not 1 <= value <= original:
                return f"{key}={value}: a smoke shape only lowers the values of shape {base_id}"
        return ""
    for key, value in values.items():
        error = _key_domain_error(problem, key, value)
        if error:
            return error
    return ""


def _key_domain_error(problem: Problem, key: str, value: int) -> str:
    domain = problem.fuzz.get(key)
    if not isinstance(domain, dict):
        declared = ", ".join(problem.fuzz) or "none"
        return f"{problem.name} declares no fuzz domain for {key!r} (fuzzable: {declared})"
    if "choices" in domain:
        choices = [int(c) for c in domain["choices"] if isinstance(c, (int, float))]
        return "" if value in choices else f"{key}={value} is not one of the declared choices {choices}"
    lo = int(domain.get("min", 1))
    hi = domain.get("max")
    if hi is None:  # no declared maximum: the largest size among the problem's own shapes
        sizes = [v for s in problem.shapes.values() for v in (_base_value(s, key),)
                 if isinstance(v, int) and not isinstance(v, bool)]
        hi = max(sizes, default=lo)
    multiple = int(domain.get("multiple_of", 1))
    if not lo <= value <= int(hi):
        return f"{key}={value} is outside the declared domain [{lo}, {int(hi)}]"
    if multiple > 1 and value % multiple:
        return f"{key}={value} is not a multiple of {multiple}"
    return ""


def _base_value(base: Shape, key: str) -> Any:
    return base.input_kwargs.get(key, base.init_kwargs.get(key))


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def candidate_values(domain: dict[str, Any], base_value: int, cpu: bool, rng: random.Random) -> list[tuple[str, int]]:
    """(kind, value) pairs inside the domain that differ from the base value."""
    if "choices" in domain:
        choices = [int(c) for c in domain["choices"] if isinstance(c, (int, float)) and int(c) != base_value]
        if cpu:
            choices = [c for c in choices if c <= max(CPU_GROWTH * base_value, min(choices, default=0))]
        return [("choice", c) for c in choices]
    lo, hi = int(domain.get("min", 1)), int(domain.get("max", base_value))
    multiple = int(domain.get("multiple_of", 1))
    cap = min(hi, max(CPU_GROWTH * base_value, lo)) if cpu else hi
    values: list[tuple[str, int]] = []
    one = _round_up(max(lo, 1), multiple)
    if one < base_value:
        values.append(("one", one))
    tail = _round_up(base_value + 17, multiple)
    if tail <= cap:
        values.append(("tail", tail))
    if cap > lo:
        for _ in range(8):
            odd = _round_up(rng.randint(lo, cap), multiple)
            if odd <= cap and not _is_pow2(odd) and odd != base_value:
                values.append(("odd", odd))
                break
    largest = cap - cap % multiple
    if largest > base_value and largest >= lo:
        values.append(("largest", largest))
    return values


def fuzz_shapes(problem: Problem, bases: list[Shape], count: int, cpu: bool) -> list[Shape]:
    """`count` fuzzed shapes, deterministic for the problem; 'one row' and 'largest' cases come first."""
    if count <= 0 or not bases or not problem.fuzz:
        return []
    rng = random.Random(derive_seed(problem.name, "fuzz", 0))
    pool: list[tuple[str, str, Shape]] = []  # (kind, key, shape)
    for base in bases:
        for key, domain in problem.fuzz.items():
            value = _base_value(base, key)
            if not isinstance(value, int) or isinstance(value, bool) or not isinstance(domain, dict):
                continue
            for kind, new_value in candidate_values(domain, value, cpu, rng):
                pool.append((kind, key, _with_value(base, key, new_value)))
    rng.shuffle(pool)
    chosen: list[Shape] = []
    used_keys: set[str] = set()
    # One shape per kind first (one row, tail, largest, odd size, other choice), spreading over keys.
    for kind in ("one", "tail", "largest", "odd", "choice"):
        of_kind = [item for item in pool if item[0] == kind]
        of_kind.sort(key=lambda item: item[1] in used_keys)
        if of_kind and len(chosen) < count:
            chosen.append(of_kind[0][2])
            used_keys.add(of_kind[0][1])
    for _, _, shape in pool:
        if len(chosen) >= count:
            break
        if shape not in chosen:
            chosen.append(shape)
    return chosen[:count]
