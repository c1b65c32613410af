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
import inspect
import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import torch

from aka_tui.agent.probe import Probe, flatten_outputs, outputs_close
from aka_tui.bench.problem.model import Problem
from aka_tui.knowledge.reference_kernels import ReferenceKernel

MAX_MAPPINGS_PER_KERNEL = 96
MAX_PARTIAL_MAPPINGS = 100_000  # partial forward mappings the search expands per kernel
SEARCH_BUDGET_S = 120.0


@dataclass(frozen=True)
class Param:
    """One parameter of a Model's __init__ or forward, with what the kernel's own problem passes for it."""

    name: str
    default: Any  # inspect.Parameter.empty when required
    example: Any = None  # a value the kernel's own problem passes (tensor or scalar), None when unknown
    annotation: str = ""  # the parameter's annotation as written ("str | None"), "" when there is none
    variants: tuple = ()  # what the kernel's own problem passes for it in its other semantic groups

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


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


def signature_params(fn: Any, examples: dict[str, Any] | None = None,
                     variants: dict[str, list[Any]] | None = None) -> list[Param]:
    """The parameters of a method (self, *args and **kwargs left out)."""
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = "" if p.annotation is inspect.Parameter.empty else str(p.annotation)
        params.append(Param(p.name, p.default, (examples or {}).get(p.name), annotation,
                            tuple((variants or {}).get(p.name, ()))))
    return params


def _dtype_class(dtype: torch.dtype) -> Any:
    """A dtype, with the fp8 encodings as one class (e4m3fn, e4m3fnuz, e5m2 all hold quantised values)."""
    return "fp8" if dtype.is_floating_point and dtype.itemsize == 1 else dtype


def _same_dtype(value: torch.Tensor, param: Param) -> bool:
    """The input has a dtype the kernel's own problem passes for this parameter, in any of its semantic groups
    (an fp8 input for a parameter that is float32 in the smallest shape but fp8 in a quantised variant)."""
    return any(isinstance(e, torch.Tensor) and _dtype_class(e.dtype) == _dtype_class(value.dtype)
               for e in (param.example, *param.variants))


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return "bool-tensor"
        return "float-tensor" if value.is_floating_point() else "int-tensor"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "none" if value is None else "other"


def _arg_candidates(param: Param, inputs: dict[str, Any],
                    namesakes: frozenset[str] = frozenset()) -> list[tuple[float, list[Any]]]:
    """(score, spec) for one kernel forward parameter: problem inputs of the same kind, None, or its default.
    An input named after another of the kernel's parameters (`namesakes`) scores one less: it most likely
    feeds that one."""
    options: list[tuple[float, list[Any]]] = []
    example = param.example
    for name, value in inputs.items():
        if example is not None and _kind(value) != _kind(example):
            continue
        if example is None and not isinstance(value, torch.Tensor):
            continue
        score = 4.0 if name == param.name else 0.0
        if example is None and not param.required and name != param.name:
            # an optional parameter the kernel's own problem never passes, and no input of its name: most
            # likely left at its default (an extra input it does not name is a poor guess)
            score = -2.0
        if isinstance(value, torch.Tensor) and isinstance(example, torch.Tensor):
            score += 2.0 if value.ndim == example.ndim else (0.0 if value.ndim > example.ndim else -1.0)
            score += 1.0 if _same_dtype(value, param) else 0.0
        if name != param.name and name in namesakes:
            score -= 1.0
        options.append((score, ["input", name]))
    if not param.required:
        options.append((-0.5, ["default"]))
    if param.example is None and not param.required and param.default is not None:
        options.append((-1.0, ["none"]))  # (where the default is None, leaving it out already passes None)
    return sorted(options, key=lambda o: -o[0])


def _shortlist(options: list[tuple[float, list[Any]]], keep: int = 5) -> list[tuple[float, list[Any]]]:
    """The best `keep` options, and leaving the parameter out (or None) even when it scores lower: an optional
    parameter with an example still has to be able to stay at its default."""
    return options[:keep] + [o for o in options[keep:] if o[1][0] in ("default", "none")]


def _derived_dims(param: Param, forward_params: list[Param], arg_map: dict[str, list[Any]],
                  inputs: dict[str, Any]) -> list[list[Any]]:
    """Sizes the init value was in the kernel's own problem: where its example equals an axis of a forward
    example (counted from the end, so a cache with extra leading axes still lines up), that axis of the
    problem input mapped to the same parameter (e.g. num_heads = q.shape[-2])."""
    if not isinstance(param.example, int) or isinstance(param.example, bool):
        return []
    found: list[list[Any]] = []
    for fp in forward_params:
        spec = arg_map.get(fp.name)
        if not isinstance(fp.example, torch.Tensor) or spec is None or spec[0] != "input":
            continue
        value = inputs.get(spec[1])
        if not isinstance(value, torch.Tensor):
            continue
        for axis in range(-1, -min(fp.example.ndim, value.ndim) - 1, -1):
            if int(fp.example.shape[axis]) == param.example:
                found.append(["dim", spec[1], axis])
    return found


def _param_kind(param: Param) -> str:
    """The kind of value an init parameter takes: its example's, else its default's."""
    kind = _kind(param.example if param.example is not None else
                 (param.default if not param.required else None))
    if kind == "none" and "str" in param.annotation and "int" not in param.annotation:
        kind = "str"  # `out_dtype: str | None = None`: a name, never a size
    return kind


def init_claims(params: list[Param], problem_init: dict[str, Any]) -> dict[str, str]:
    """The kernel parameter each problem init argument most plausibly feeds: its namesake, else the first
    parameter (in signature order, without a namesake) of its kind not yet fed. Orders the search only."""
    claims = {p.name: p.name for p in params if p.name in problem_init}
    for param in params:
        if param.name in problem_init:
            continue
        kind = _param_kind(param)
        free = [n for n, v in problem_init.items() if n not in claims and _kind(v) == kind]
        if free:
            claims[free[0]] = param.name
    return claims


def _init_candidates(param: Param, problem_init: dict[str, Any], inputs: dict[str, Any],
                     arg_map: dict[str, list[Any]], output_dtypes: list[str],
                     forward_params: list[Param] | None = None,
                     claims: dict[str, str] | None = None) -> list[list[Any]]:
    """Values to try for one kernel init parameter, most plausible first: a problem init argument of the same
    name or one that feeds no other parameter (`init_claims`), the default, sizes derived from the kernel's
    own examples, arguments that feed another parameter, then any input size."""
    kind = _param_kind(param)
    claims = claims or {}
    options: list[list[Any]] = []
    if param.name in problem_init:
        options.append(["init", param.name])
    same_kind = [n for n, v in problem_init.items() if _kind(v) == kind and n != param.name]
    options += [["init", n] for n in same_kind if claims.get(n, param.name) == param.name]
    if not param.required:
        options.append(["default"])
    options += _derived_dims(param, forward_params or [], arg_map, inputs)
    options += [["init", n] for n in same_kind if claims.get(n, param.name) != param.name]
    if kind in ("int", "none", "other"):
        mapped = [spec[1] for spec in arg_map.values() if spec[0] == "input"]
        for name in mapped + [n for n in inputs if n not in mapped]:
            value = inputs.get(name)
            if isinstance(value, torch.Tensor):
                options += [["dim", name, axis] for axis in range(-1, -value.ndim - 1, -1)]
    if kind in ("str", "none"):
        options += [["const", d] for d in output_dtypes]
    if kind == "bool":
        options += [["const", True], ["const", False]]
    unique: list[list[Any]] = []
    for option in options:
        if option not in unique:
            unique.append(option)
    return unique


def resolve(spec: list[Any], init: dict[str, Any], inputs: dict[str, Any]) -> Any:
    """The value a spec stands for on one call (the generated adapter does the same at run time)."""
    if spec[0] == "init":
        return init[spec[1]]
    if spec[0] == "const":
        return spec[1]
    if spec[0] == "dim":
        return int(inputs[spec[1]].shape[spec[2]])
    if spec[0] == "input":
        return inputs.get(spec[1])  # an optional input a call leaves out is None, as the forward's default
    return None


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
            module = _import_interpreted(kernel.path)
        except Exception:
            return None
        init_examples, forward_examples = declared_examples(getattr(module, "Model", None))
    model_class = getattr(module, "Model", None)
    if model_class is None:
        return None
    return KbSemantics(kernel, model_class, signature_params(model_class.__init__, init_examples),
                       signature_params(model_class.forward, forward_examples, forward_variants))


def _import_interpreted(path: Path) -> ModuleType:
    """A kernel file imported with Triton's interpreter: its kernels then run on the CPU probe inputs (and on
    CUDA ones, copied through the host) in any session, and a wrong trial mapping raises in Python instead of
    ending a CUDA context. `@triton.jit` reads TRITON_INTERPRET when each kernel is defined, so setting it for
    the import is enough; the session's own candidates are unaffected."""
    from aka_tui.bench.problem.module_loading import import_file

    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        return import_file(path, "kb_kernel")
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous


def declared_examples(model_class: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(init, forward) examples a kernel's Model declares in `EXAMPLE_CALL` (used when no suite problem defines
    its interface): init values as they are, forward tensors as [dtype name, shape] (zeros: only kind, rank,
    dtype and sizes are read). Anything malformed is left out."""
    declared = getattr(model_class, "EXAMPLE_CALL", None)
    if not isinstance(declared, dict):
        return {}, {}
    init = declared.get("init")
    forward: dict[str, Any] = {}
    for name, spec in (declared.get("forward") or {}).items():
        dtype = getattr(torch, spec[0], None) if isinstance(spec, (list, tuple)) and len(spec) == 2 else None
        if isinstance(dtype, torch.dtype) and all(isinstance(n, int) and n >= 0 for n in spec[1]):
            forward[name] = torch.zeros(tuple(spec[1]), dtype=dtype)
        elif isinstance(spec, (bool, int, float, str)):
            forward[name] = spec
    return (dict(init) if isinstance(init, dict) else {}), forward


def _arg_maps(semantics: KbSemantics, inputs: dict[str, Any]) -> Iterator[dict[str, list[Any]]]:
    """Injective mappings of the kernel's forward parameters onto the problem's inputs, best-scored first (ties
    in the product's order). A best-first search over partial mappings, bounded by the best score each
    remaining parameter could add: a kernel with a dozen optional parameters has millions of combinations,
    most of them using an input twice, and the search reads a few dozen mappings."""
    names = frozenset(p.name for p in semantics.forward_params)
    per_param = [_shortlist(_arg_candidates(p, inputs, names)) for p in semantics.forward_params]
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
            probe: Probe, read_only: frozenset[str] = frozenset()) -> tuple[list[torch.Tensor], tuple] | None:
    """The kernel's semantics on one probe under a mapping (flat outputs and their structure); None when it
    does not run; no outputs when it writes into a problem input named in `read_only` (the evaluator fails a
    candidate that modifies an input its reference only reads: an in-place form of the kernel cannot serve)."""
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
        for name, spec in arg_map.items():
            given = probe.inputs.get(spec[1]) if spec[0] == "input" and spec[1] in read_only else None
            if isinstance(given, torch.Tensor) and not torch.equal(args[name], given):
                return [], structure
        return [t for t in flat if isinstance(t, torch.Tensor)], structure
    except Exception:
        return None


def _match_outputs(probe: Probe, produced: list[torch.Tensor], tolerance: Any) -> list[list[Any]] | None:
    """For each problem output, a kernel output that equals it (directly, or viewed as an input's shape)."""
    out_map: list[list[Any]] = []
    for expected in probe.outputs:
        found: list[Any] | None = None
        for index, actual in enumerate(produced):
            if outputs_close(expected, actual, tolerance.atol, tolerance.rtol):
                found = [index]
                break
        if found is None:
            for index, actual in enumerate(produced):
                if actual.numel() != expected.numel() or actual.dtype != expected.dtype:
                    continue
                same_shape = [n for n, v in probe.inputs.items()
                              if isinstance(v, torch.Tensor) and v.shape == expected.shape]
                if same_shape and outputs_close(expected, actual.reshape(expected.shape), tolerance.atol,
                                                tolerance.rtol):
                    found = [index, "view_as", same_shape[0]]
                    break
        if found is None:
            return None
        out_map.append(found)
    return out_map


def _out_map_holds(probe: Probe, produced: list[torch.Tensor], out_map: list[list[Any]], tolerance: Any) -> bool:
    for expected, spec in zip(probe.outputs, out_map):
        if spec[0] >= len(produced):
            return False
        actual = produced[spec[0]]
        if len(spec) > 1:
            if actual.numel() != expected.numel():
                return False
            actual = actual.reshape(probe.inputs[spec[2]].shape)
        if not outputs_close(expected, actual, tolerance.atol, tolerance.rtol):
            return False
    return True


def match_kernel(problem: Problem, probes: list[Probe], semantics: KbSemantics,
                 deadline: float) -> TransferMatch | None:
    """The first mapping under which the kernel reproduces every output on every probe, or None."""
    first = probes[0]
    init = first.init or dict(first.shape.init_kwargs or {})
    tolerance = problem.tolerance_for(problem.dtype)
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in first.outputs})
    # optional inputs some shapes leave out: every input name any probe has, with the first value seen
    union: dict[str, Any] = {}
    for probe in probes:
        for name, value in probe.inputs.items():
            union.setdefault(name, value)
    claims = init_claims(semantics.init_params, init)
    read_only = frozenset(name for name in union if name not in problem.mutates_inputs)
    tried = 0
    for arg_map in _arg_maps(semantics, union):
        per_init = [_init_candidates(p, init, union, arg_map, dtypes, semantics.forward_params, claims)
                    for p in semantics.init_params]
        if any(not c for c in per_init):
            continue
        failures = 0
        for init_combo in itertools.islice(itertools.product(*[c[:8] for c in per_init]), 64):
            tried += 1
            if tried > MAX_MAPPINGS_PER_KERNEL or time.monotonic() > deadline:
                return None
            init_map = {p.name: spec for p, spec in zip(semantics.init_params, init_combo)}
            ran = _run_kb(semantics, init_map, arg_map, first, read_only)
            if ran is None:
                failures += 1
                if failures >= 6:  # this forward mapping does not run: other init values rarely help
                    break
                continue
            produced, kb_structure = ran
            out_map = _match_outputs(first, produced, tolerance)
            if out_map is None:
                continue
            others = [(_run_kb(semantics, init_map, arg_map, p, read_only) or ([], ()))[0] for p in probes[1:]]
            if all(_out_map_holds(p, flat, out_map, tolerance) for p, flat in zip(probes[1:], others)):
                renamed = {k: v[1] for k, v in arg_map.items() if v[0] == "input" and v[1] != k}
                why = (f"transfer from the knowledge base's {semantics.kernel.entry_id}: reproduces every output "
                       f"on {len(probes)} probe shape(s)"
                       + (f"; arguments mapped {', '.join(f'{k}←{v}' for k, v in renamed.items())}"
                          if renamed else ""))
                return TransferMatch(semantics.kernel, init_map, arg_map, out_map, first.structure, why,
                                     kb_structure)
    return None


def find_transfers(problem: Problem, kernels: list[ReferenceKernel], probes: list[Probe],
                   suite_dir: Path | None, budget_s: float = SEARCH_BUDGET_S, limit: int = 1) -> list[TransferMatch]:
    """Reference kernels that reproduce the problem's semantics, at most `limit`: family matches first, and
    within each group the kernels whose semantics is a suite reference (PyTorch, fast) before those that run
    as their own semantics on the interpreter (seconds per trial on full-size probes)."""
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
        if match is not None:
            matches.append(match)
    return matches
