"""Probe runs: a problem's reference on a few small shapes, and comparison of outputs by structure and value.

The transfer from the knowledge base and the compiler seed both judge a candidate by what it computes, never
by names: they run the new problem's reference on probe inputs and compare what another implementation
returns for the same inputs.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable

import torch

from aka_tui.bench.problem.inputs import clone_inputs, make_inputs, modified_inputs
from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.settled_order import import_reference
from aka_tui.bench.problem.tolerance import Tolerance, output_rms, scaled_to

PROBE_SEED = 20261201


@dataclass
class Probe:
    """One probe: a shape, its inputs on the probe device, and the reference's flat outputs."""

    shape: Shape
    inputs: dict[str, Any]
    outputs: list[torch.Tensor]
    structure: tuple  # ("tensor",) | ("tuple", n) | ("dict", keys)
    init: dict[str, Any] = field(default_factory=dict)  # every init argument, defaults applied
    written: frozenset[str] = frozenset()  # inputs the reference wrote into (it works in place)
    aliases: tuple[str | None, ...] = ()  # per output, the input it is (the same tensor: returned in place)


def flatten_outputs(value: Any) -> tuple[list[torch.Tensor], tuple]:
    """A forward's result as a flat tensor list plus how to rebuild it."""
    if isinstance(value, torch.Tensor):
        return [value], ("tensor",)
    if isinstance(value, dict):
        keys = tuple(value.keys())
        return [value[k] for k in keys], ("dict", keys)
    if isinstance(value, (tuple, list)):
        return list(value), ("tuple", len(value))
    raise TypeError(f"a forward returned {type(value).__name__}, not a tensor, a tuple or a dict")


def _shape_size(problem: Problem, shape: Shape) -> float:
    """A size to order shapes by: roofline bytes when known, else the product of the numeric input kwargs."""
    entry = problem.roofline.get(shape.shape_id)
    if entry is not None and entry.bytes_total > 0:
        return entry.bytes_total
    numbers = [v for v in shape.input_kwargs.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return float(math.prod(abs(v) + 1 for v in numbers))


def probe_shapes(problem: Problem, count: int = 2, groups_max: int = 4) -> list[Shape]:
    """The `count` smallest shapes (smoke tier first), then the smallest shape of each further combination of
    init arguments and string input arguments (a flag or a dtype changes what is computed), `groups_max` in all."""
    smoke = problem.shapes_for("smoke")
    pool = sorted(smoke or problem.shapes_for(None), key=lambda s: _shape_size(problem, s))
    if len(pool) < count and smoke:
        rest = [s for s in sorted(problem.shapes_for(None), key=lambda s: _shape_size(problem, s)) if s not in pool]
        pool += rest
    shrink = _shrinker(problem) if problem.smoke_shape_ids else None
    chosen = pool[:1]
    for shape in pool[1:]:
        if len(chosen) >= count:
            break
        if shrink is not None and shape.tier != "smoke":
            shape = shrink(shape)
        if all(shape.init_kwargs != c.init_kwargs or shape.input_kwargs != c.input_kwargs for c in chosen):
            chosen.append(shape)
    if count > 1:
        seen = {_semantic_group(c) for c in chosen}
        for shape in _group_candidates(problem, smoke, shrink):
            if len(chosen) >= max(groups_max, count):
                break
            if _semantic_group(shape) not in seen:
                seen.add(_semantic_group(shape))
                chosen.append(shape)
    return chosen


def _group_candidates(problem: Problem, smoke: list[Shape], shrink: Any) -> Iterator[Shape]:
    """Shapes that may add a combination of init arguments and string arguments: the smoke tier's, smallest
    first, then (for a derived smoke tier) the other tiers' combinations, shrunk as the probes are. A start is
    timed on every tier, and a published suite's smoke tier holds one combination of its many (a fused QKV +
    RoPE: 32 heads in smoke, 40 and 64 only in the full tier)."""
    yield from sorted(smoke or problem.shapes_for(None), key=lambda s: _shape_size(problem, s))
    if smoke and shrink is not None:
        for shape in sorted(problem.shapes_for(None), key=lambda s: _shape_size(problem, s)):
            if shape.tier != "smoke":
                yield shrink(shape)


def _shrinker(problem: Problem) -> Any:
    """For a problem whose smoke tier is derived (a published suite: its smallest shape shrunk to fit the CPU),
    the same shrinking for every further probe: a published shape padding the probes runs at full size
    otherwise (seen: a fused MoE whose reference dequantises every expert's weights to fp32, over 24 GiB for
    its second-smallest shape, where the shrunk shape takes a few MB)."""
    from aka_tui.bench.problem.shrink import shrink_shape

    module = import_file(problem.input_path, f"probe_shrink_{problem.name}")
    return lambda shape: shrink_shape(problem, module, shape)


def _semantic_group(shape: Shape) -> str:
    strings = sorted((k, v) for k, v in shape.input_kwargs.items() if isinstance(v, str))
    return repr((sorted((shape.init_kwargs or {}).items()), strings))


def load_modules(problem: Problem) -> tuple[ModuleType, ModuleType]:
    """The problem's reference and input modules."""
    return import_reference(problem.reference_path, "probe_ref"), import_file(problem.input_path, "probe_in")


HELD_SEED = 20261207  # the random generator's seed while a probe's reference Model is built


def reference_model(reference: ModuleType, init: dict[str, Any], device: Any) -> Any:
    """`Model(**init)` on the device, evaluation mode, built with the random generator at a fixed seed: a
    reference that draws its parameters or buffers at random holds the same ones in every probe, and a
    candidate checked on the probes can be given them (the evaluator gives it the reference's state dict)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(HELD_SEED)
        model = reference.Model(**init)
    return model.to(device).eval() if isinstance(model, torch.nn.Module) else model


def reference_tensors(model_class: Any, problem: Any) -> tuple[list[str], list[str]]:
    """What the reference Model built for the problem's smallest shape holds rather than takes: its state-dict
    names (the evaluator gives a candidate the reference's state dict by name), and its buffers outside the state
    dict (tables it computes at init, which no candidate is given)."""
    shapes = problem.shapes_for("smoke") or list(problem.shapes.values())
    init = shapes[0].init_kwargs or {}
    for where in ("meta", None):  # no memory for the tensors first (a reference may allocate large weights)
        try:
            with torch.device(where) if where else contextlib.nullcontext():
                model = model_class(**init)
            if not isinstance(model, torch.nn.Module):
                return [], []
            state = list(model.state_dict())
            return state, [name for name, _ in model.named_buffers() if name not in state]
        except Exception:  # built for real next; the probes report a reference that cannot be built at all
            continue
    return [], []


def inputs_device(inputs: dict[str, Any]) -> torch.device:
    """The device of the first tensor among `inputs` (the CPU where there is none)."""
    return next((v.device for v in inputs.values() if isinstance(v, torch.Tensor)), torch.device("cpu"))


def run_reference(reference: ModuleType, shape: Shape,
                  inputs: dict[str, Any]) -> tuple[Any, frozenset[str], tuple[str | None, ...]]:
    """The reference's forward on a copy of `inputs`, the inputs it wrote into, and per flat output the input
    it is (an in-place reference returning what it wrote), else None."""
    model = reference_model(reference, shape.init_kwargs or {}, inputs_device(inputs))
    given = clone_inputs(inputs)
    with torch.no_grad():
        result = model(**given)
    written = modified_inputs(inputs, given)
    if result is None and written:  # it works in place: what it wrote is its output, as the evaluator reads it
        result = {name: given[name] for name in inputs if name in written}
    names = {id(v): name for name, v in given.items() if isinstance(v, torch.Tensor)}
    return result, written, tuple(names.get(id(t)) for t in flatten_outputs(result)[0])


def gives_the_same_outputs_again(problem: Problem, reference: ModuleType, probe: Probe) -> bool:
    """Whether the reference, run again on the probe's inputs, returns the probe's outputs within the problem's
    tolerance (not for one that draws random numbers in its forward: no kernel can be checked against it)."""
    try:
        again, _ = flatten_outputs(run_reference(reference, probe.shape, probe.inputs)[0])
    except Exception:  # a reference that fails now failed its probes too: the reason given there stands
        return True
    return len(again) == len(probe.outputs) and all(
        output_matches(problem.tolerance_for, want, got) for want, got in zip(probe.outputs, again))


def make_probes(problem: Problem, device: str, count: int = 2) -> list[Probe]:
    """Probe inputs and reference outputs on the `count` smallest shapes."""
    reference, input_module = load_modules(problem)
    probes = []
    for index, shape in enumerate(probe_shapes(problem, count)):
        inputs = make_inputs(problem, input_module, shape, device, PROBE_SEED + index)
        result, written, aliases = run_reference(reference, shape, inputs)
        outputs, structure = flatten_outputs(result)
        probes.append(Probe(shape, inputs, [o.detach() for o in outputs], structure,
                            full_init(reference.Model, shape.init_kwargs or {}), written, aliases))
    if probes:
        small = _small_magnitude_probe(reference, probes[0])
        if small is not None:
            probes.append(small)
    return probes


def _small_magnitude_probe(reference: ModuleType, probe: Probe) -> Probe | None:
    """The first probe with its floating inputs scaled by 1e-3: where an epsilon or a clamp floor matters,
    two implementations that differ only there disagree (None when the reference refuses such inputs).
    One-element tensors keep their value: they are scales or constants, not data (scaled, a scale a reference
    ignores in one mode becomes one the kernel applies, and no mapping reproduces every probe)."""
    inputs = {k: (v * 1e-3).to(v.dtype) if isinstance(v, torch.Tensor) and v.is_floating_point()
              and v.dtype.itemsize > 1 and v.numel() > 1 else v for k, v in probe.inputs.items()}
    try:
        result, written, aliases = run_reference(reference, probe.shape, inputs)
        outputs, structure = flatten_outputs(result)
    except Exception:
        return None
    return replace(probe, inputs=inputs, outputs=[o.detach() for o in outputs], structure=structure,
                   written=written, aliases=aliases)


def full_init(model_class: Any, init_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Every init argument of `model_class` as a call with `init_kwargs` sees it (defaults applied)."""
    signature = inspect.signature(model_class.__init__)
    try:
        bound = signature.bind(None, **init_kwargs)
    except TypeError:
        return dict(init_kwargs)
    bound.apply_defaults()
    plain = {n for n, p in signature.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return {k: v for k, v in list(bound.arguments.items())[1:] if k in plain}


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def output_matches(tolerance_for: Callable[[torch.dtype], Any], expected: torch.Tensor, actual: Any) -> bool:
    """`outputs_close` at the tolerance for the expected output's own dtype (`Problem.tolerance_for`), as the
    evaluator compares each output."""
    tolerance = tolerance_for(expected.dtype)
    return outputs_close(expected, actual, tolerance.atol, tolerance.rtol)


def outputs_close(expected: torch.Tensor, actual: Any, atol: float, rtol: float,
                  mismatch_fraction: float = 0.01) -> bool:
    """Same shape and dtype, and values within tolerance on all but `mismatch_fraction` of the elements
    (integers and booleans exactly); a small allowance absorbs rounding-order differences between two
    implementations of one semantics."""
    if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    if expected.numel() == 0:
        return True
    if not expected.is_floating_point():
        return bool(torch.equal(expected.cpu(), actual.cpu()))
    expected, actual = expected.detach().cpu(), actual.detach().cpu()
    bits = _SAME_SIZE_INT.get(expected.dtype.itemsize)
    if bits is not None and torch.equal(expected.view(bits), actual.view(bits)):
        return True  # bit for bit (NaN and inf where the reference has them): copied or untouched caches, mostly
    e, a = expected.double(), actual.double()
    atol = scaled_to(Tolerance(atol, rtol), output_rms(e)).atol  # as the evaluator compares (outputs far below atol)
    if expected.dtype.itemsize == 1:  # fp8: a few mantissa bits, one rounding step apart is the same value
        rtol = max(rtol, 0.13)
    finite = torch.isfinite(e)
    if not torch.equal(finite, torch.isfinite(a)):
        return False
    if bool(finite.all()):  # no masked copies when every value is finite
        bad = (~torch.isclose(a, e, rtol=rtol, atol=atol)).sum().item()
    else:
        bad = (~torch.isclose(a[finite], e[finite], rtol=rtol, atol=atol)).sum().item()
        if not torch.equal(e[~finite], a[~finite]) and bool((e[~finite] == e[~finite]).any()):
            return False
    if bool((e == 0).all()) != bool((a == 0).all()):
        return False
    return bad <= mismatch_fraction * max(int(finite.sum().item()), 1)
