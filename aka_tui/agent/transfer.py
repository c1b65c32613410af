"""Transfer from the knowledge base: find reference kernels that compute what a new problem computes.

For each reference kernel, its semantics (the reference of the operator it was written for, or the kernel
itself) is run on the new problem's probe inputs under argument mappings: forward arguments by kind, rank and
name (names only order the search), init arguments from the problem's init kwargs, defaults or input
dimensions. A mapping matches when every output of the new reference is reproduced on every probe, by shape,
dtype and value. Matching is semantic: two kernels with different interfaces but one computation match, two
kernels with the same names but another computation do not.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import torch

from aka_tui.agent.own_semantics import declared_examples, import_interpreted
from aka_tui.agent.probe import Probe, flatten_outputs, output_matches
from aka_tui.agent.transfer_params import (
    Param,
    arg_candidates,
    init_candidates,
    init_claims,
    resolve,
    shortlist,
    signature_params,
)
from aka_tui.bench.problem.model import Problem
from aka_tui.knowledge.reference_kernels import ReferenceKernel

MAX_MAPPINGS_PER_KERNEL = 96
MAX_PARTIAL_MAPPINGS = 100_000  # partial forward mappings the search expands per kernel
SEARCH_BUDGET_S = 120.0



@dataclass
class TransferMatch:
    """A reference kernel and the mapping under which it reproduces the new problem's outputs."""

    kernel: ReferenceKernel
    init_map: dict[str, list[Any]]  # kb init param -> ["init", name] | ["const", v] | ["dim", input, axis]
    arg_map: dict[str, list[Any]]  # kb forward param -> ["input", name] | ["none"]
    out_map: list[list[Any]]  # per problem output: [kb output index] or [index, "view_as", input name]
    structure: tuple
    rationale: str = ""
    kb_structure: tuple = ()
    notes: list[str] = field(default_factory=list)
    # kb forward params given a copy of their input: the kernel writes into them and the problem only reads them
    copied: tuple[str, ...] = ()



@dataclass
class KbSemantics:
    """How to run what a reference kernel computes: its Model class and its parameters."""

    kernel: ReferenceKernel
    model_class: Any
    init_params: list[Param]
    forward_params: list[Param]


def kb_semantics(kernel: ReferenceKernel, suite_dir: Path | None) -> KbSemantics | None:
    """The semantics of a reference kernel: the reference of its own problem when the suite has it (plain
    PyTorch, fast), else the kernel's own Model on Triton's interpreter; examples of its arguments from that
    problem's smallest shape with variants from its other probe shapes (other semantic groups: other dtypes, and
    the optional inputs the smallest shape leaves out), else from the Model's `EXAMPLE_CALL`."""
    from aka_tui.agent.probe import load_modules, probe_shapes
    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem

    init_examples: dict[str, Any] = {}
    init_variants: dict[str, list[Any]] = {}
    forward_examples: dict[str, Any] = {}
    forward_variants: dict[str, list[Any]] = {}
    module: ModuleType | None = None
    for op in kernel.ops:
        directory = (suite_dir / op) if suite_dir is not None else None
        if directory is None or not (directory / "reference.py").exists():
            continue
        try:
            own = load_problem(directory)
            module, input_module = load_modules(own)
            shape, *others = probe_shapes(own, 2)
            init_examples = dict(shape.init_kwargs or {})
            # the modes (string init arguments: an activation, a cache dtype) every shape of its problem uses
            for other in own.shapes.values():
                for name, value in (other.init_kwargs or {}).items():
                    if isinstance(value, str) and value not in init_variants.setdefault(name, []):
                        init_variants[name].append(value)
            forward_examples = make_inputs(own, input_module, shape, "cpu", 0)
            # The other probe shapes (further semantic groups): the optional inputs only they pass (the block
            # scales of a quantised variant) and the other dtypes an argument takes.
            for other in others:
                for name, value in make_inputs(own, input_module, other, "cpu", 0).items():
                    forward_variants.setdefault(name, []).append(value)
                    forward_examples.setdefault(name, value)
        except Exception:  # a broken suite entry only costs the examples
            module = None
            continue
        break
    if module is None:
        try:
            module = import_interpreted(kernel.path)
        except Exception:
            return None
        init_examples, forward_examples = declared_examples(getattr(module, "Model", None))
    model_class = getattr(module, "Model", None)
    if model_class is None:
        return None
    return KbSemantics(kernel, model_class, signature_params(model_class.__init__, init_examples, init_variants),
                       signature_params(model_class.forward, forward_examples, forward_variants))



def _arg_maps(semantics: KbSemantics, inputs: dict[str, Any]) -> Iterator[dict[str, list[Any]]]:
    """Injective mappings of the kernel's forward parameters onto the problem's inputs, best-scored first (ties
    in the product's order). A best-first search over partial mappings, bounded by the best score each
    remaining parameter could add: a kernel with a dozen optional parameters has millions of combinations,
    most of them using an input twice, and the search reads a few dozen mappings."""
    names = frozenset(p.name for p in semantics.forward_params)
    per_param = [shortlist(arg_candidates(p, inputs, names)) for p in semantics.forward_params]
    if any(not c for c in per_param):
        return
    any_tensor = any(isinstance(v, torch.Tensor) for v in inputs.values())
    best_rest = [0.0] * (len(per_param) + 1)
    for i in reversed(range(len(per_param))):
        best_rest[i] = best_rest[i + 1] + per_param[i][0][0]
    heap: list[tuple[float, tuple[int, ...], float]] = [(-best_rest[0], (), 0.0)]
    for _ in range(MAX_PARTIAL_MAPPINGS):
        if not heap:
            return
        _, prefix, score = heapq.heappop(heap)
        specs = [per_param[i][j][1] for i, j in enumerate(prefix)]
        used = {spec[1] for spec in specs if spec[0] == "input"}
        if len(prefix) == len(per_param):
            if used or not any_tensor:
                yield {p.name: spec for p, spec in zip(semantics.forward_params, specs)}
            continue
        for j, (option_score, spec) in enumerate(per_param[len(prefix)]):
            if spec[0] != "input" or spec[1] not in used:
                total = score + option_score
                heapq.heappush(heap, (-(total + best_rest[len(prefix) + 1]), prefix + (j,), total))


def _run_kb(semantics: KbSemantics, init_map: dict[str, list[Any]], arg_map: dict[str, list[Any]],
            probe: Probe, read_only: frozenset[str] = frozenset(),
            copied: frozenset[str] = frozenset()) -> tuple[list[torch.Tensor], tuple, frozenset[str]] | None:
    """The kernel's semantics on one probe under a mapping: flat outputs, their structure and the kernel
    params that wrote into a problem input named in `read_only`; None when it does not run. With such writes
    there are no outputs (the evaluator fails a candidate that modifies an input its reference only reads)
    unless the params are in `copied`: the adapter then passes them a copy (an in-place kernel serving an
    out-of-place reference)."""
    init = probe.init or dict(probe.shape.init_kwargs or {})
    try:
        kwargs = {k: resolve(v, init, probe.inputs) for k, v in init_map.items() if v[0] != "default"}
        model = semantics.model_class(**kwargs)
        device = next((v.device for v in probe.inputs.values() if isinstance(v, torch.Tensor)), None)
        if isinstance(model, torch.nn.Module) and device is not None:
            model = model.to(device).eval()
        args = {k: (v.clone() if isinstance(v, torch.Tensor) else v)
                for k, spec in arg_map.items() if spec[0] != "default"
                for v in [resolve(spec, init, probe.inputs)]}
        with torch.no_grad():
            flat, structure = flatten_outputs(model(**args))
        read = {name: probe.inputs.get(spec[1]) for name, spec in arg_map.items()
                if spec[0] == "input" and spec[1] in read_only}
        wrote = frozenset(name for name, given in read.items()
                          if isinstance(given, torch.Tensor) and not torch.equal(args[name], given))
        if wrote - copied:
            return [], structure, wrote
        return [t for t in flat if isinstance(t, torch.Tensor)], structure, wrote
    except Exception:
        return None


def _match_outputs(probe: Probe, produced: list[torch.Tensor],
                   tolerance_for: Callable[[torch.dtype], Any]) -> list[list[Any]] | None:
    """For each problem output, a kernel output that equals it (directly, or viewed as an input's shape), at the
    tolerance for that output's dtype."""
    out_map: list[list[Any]] = []
    for expected in probe.outputs:
        found: list[Any] | None = None
        for index, actual in enumerate(produced):
            if output_matches(tolerance_for, expected, actual):
                found = [index]
                break
        if found is None:
            for index, actual in enumerate(produced):
                if actual.numel() != expected.numel() or actual.dtype != expected.dtype:
                    continue
                same_shape = [n for n, v in probe.inputs.items()
                              if isinstance(v, torch.Tensor) and v.shape == expected.shape]
                if same_shape and output_matches(tolerance_for, expected, actual.reshape(expected.shape)):
                    found = [index, "view_as", same_shape[0]]
                    break
        if found is None:
            return None
        out_map.append(found)
    return out_map


def _out_map_holds(probe: Probe, produced: list[torch.Tensor], out_map: list[list[Any]],
                   tolerance_for: Callable[[torch.dtype], Any]) -> bool:
    for expected, spec in zip(probe.outputs, out_map):
        if spec[0] >= len(produced):
            return False
        actual = produced[spec[0]]
        if len(spec) > 1:
            if actual.numel() != expected.numel():
                return False
            actual = actual.reshape(probe.inputs[spec[2]].shape)
        if not output_matches(tolerance_for, expected, actual):
            return False
    return True


def _plausible_first(options: list[list[Any]], limit: int) -> list[tuple]:
    """Up to `limit` combinations of the per-parameter options (each list best first), best-first by the sum of
    the options' ranks (ties: fewer parameters away from their first option): every parameter at its likeliest
    value, then one parameter at its second, and so on. The product's order would exhaust the last parameter's
    options before trying the first parameter's second."""
    bounds = [len(o) - 1 for o in options]

    def with_sum(total: int, position: int) -> Iterator[tuple[int, ...]]:
        if position == len(bounds):
            if total == 0:
                yield ()
            return
        for pick in range(min(total, bounds[position]) + 1):
            for rest in with_sum(total - pick, position + 1):
                yield (pick, *rest)

    ranked: list[tuple[int, ...]] = []
    for total in range(sum(bounds) + 1):
        ranked += sorted(with_sum(total, 0), key=lambda c: sum(i > 0 for i in c))
        if len(ranked) >= limit:
            break
    return [tuple(o[i] for o, i in zip(options, combo)) for combo in ranked[:limit]]


def match_kernel(problem: Problem, probes: list[Probe], semantics: KbSemantics,
                 deadline: float) -> TransferMatch | None:
    """The first mapping under which the kernel reproduces every output on every probe, or None."""
    first = probes[0]
    init = first.init or dict(first.shape.init_kwargs or {})
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in first.outputs})
    # optional inputs some shapes leave out: every input name any probe has, with the first value seen
    union: dict[str, Any] = {}
    for probe in probes:
        for name, value in probe.inputs.items():
            union.setdefault(name, value)
    claims = init_claims(semantics.init_params, init)
    written = frozenset(problem.mutates_inputs).union(*(p.written for p in probes))
    read_only = frozenset(name for name in union if name not in written)
    tried = 0
    with_copies: TransferMatch | None = None
    for arg_map in _arg_maps(semantics, union):
        per_init = [init_candidates(p, init, union, arg_map, dtypes, semantics.forward_params, claims)
                    for p in semantics.init_params]
        if any(not c for c in per_init):
            continue
        failures, ran_any = 0, False
        for init_combo in _plausible_first([c[:8] for c in per_init], 64):
            tried += 1
            if tried > MAX_MAPPINGS_PER_KERNEL or time.monotonic() > deadline:
                return with_copies
            init_map = {p.name: spec for p, spec in zip(semantics.init_params, init_combo)}
            ran = _run_kb(semantics, init_map, arg_map, first, read_only)
            copied: frozenset[str] = frozenset()
            if ran is not None and ran[2]:  # it writes into inputs the problem only reads: give it copies
                copied = ran[2]
                ran = _run_kb(semantics, init_map, arg_map, first, read_only, copied)
            if ran is None:
                failures += 1
                if failures >= 6 and not ran_any:  # this forward mapping does not run: other init values
                    break  # rarely help
                continue
            ran_any = True
            produced, kb_structure, _ = ran
            out_map = _match_outputs(first, produced, problem.tolerance_for)
            if out_map is None:
                continue
            others = [(_run_kb(semantics, init_map, arg_map, p, read_only, copied) or ([], ()))[0]
                      for p in probes[1:]]
            if all(_out_map_holds(p, flat, out_map, problem.tolerance_for) for p, flat in zip(probes[1:], others)):
                renamed = {k: v[1] if v[0] == "input" else f"{v[0]} as long as {v[1]}'s last axis"
                           for k, v in arg_map.items() if (v[0] == "input" and v[1] != k) or v[0] in ("ones", "zeros")}
                why = (f"transfer from the knowledge base's {semantics.kernel.entry_id}: reproduces every output "
                       f"on {len(probes)} probe shape(s)"
                       + (f"; arguments mapped {', '.join(f'{k}←{v}' for k, v in renamed.items())}"
                          if renamed else "")
                       + (f"; copies of {', '.join(sorted(arg_map[k][1] for k in copied))} written (the kernel "
                          "works in place, the problem does not)" if copied else ""))
                match = TransferMatch(semantics.kernel, init_map, arg_map, out_map, first.structure, why,
                                      kb_structure, copied=tuple(sorted(copied)))
                if not copied:
                    return match
                # a copy of a whole input costs its bytes on every call: kept only if no mapping needs none
                # (another form of the kernel, e.g. one returning a new buffer, serves without a copy)
                with_copies = with_copies or match
    return with_copies


def find_transfers(problem: Problem, kernels: list[ReferenceKernel], probes: list[Probe],
                   suite_dir: Path | None, budget_s: float = SEARCH_BUDGET_S, limit: int = 1,
                   accept: Callable[[TransferMatch], str | None] | None = None,
                   passed_over: list[str] | None = None) -> list[TransferMatch]:
    """Reference kernels that reproduce the problem's semantics, at most `limit`: family matches first, and
    within each group the kernels whose semantics is a suite reference (PyTorch, fast) before those that run
    as their own semantics on the interpreter (seconds per trial on full-size probes). A match `accept` turns
    down (it returns why) is passed over, the reason added to `passed_over`."""
    deadline = time.monotonic() + budget_s

    def on_interpreter(kernel: ReferenceKernel) -> bool:
        return suite_dir is None or not any((suite_dir / op / "reference.py").exists() for op in kernel.ops)

    ordered = sorted(kernels, key=lambda k: (k.family != problem.family, on_interpreter(k), k.entry_id))
    matches: list[TransferMatch] = []
    for kernel in ordered:
        if time.monotonic() > deadline or len(matches) >= limit:
            break
        semantics = kb_semantics(kernel, suite_dir)
        if semantics is None:
            continue
        match = match_kernel(problem, probes, semantics, min(deadline, time.monotonic() + budget_s / 4))
        if match is None:
            continue
        why = accept(match) if accept is not None else None
        if why is None:
            matches.append(match)
        elif passed_over is not None:
            passed_over.append(f"{kernel.entry_id} matched, but its kernel {why}")
    return matches
