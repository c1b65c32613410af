"""Argument mapping for the transfer search: the kernel's parameters, and what each may take from a new problem
(its inputs by kind, rank, dtype and name; its init arguments, defaults, sizes of its inputs), best first."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any

import torch


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


def arg_candidates(param: Param, inputs: dict[str, Any],
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
    options += _identity_options(param, inputs)
    if not param.required:
        options.append((-0.5, ["default"]))
    if param.example is None and not param.required and param.default is not None:
        options.append((-1.0, ["none"]))  # (where the default is None, leaving it out already passes None)
    return sorted(options, key=lambda o: -o[0])


def _identity_options(param: Param, inputs: dict[str, Any]) -> list[tuple[float, list[Any]]]:
    """A per-channel vector the kernel requires and the problem may not have (a norm without a learned weight or
    bias): ones or zeros as long as the last axis of a floating input, in its dtype — a scale of one and a shift of
    zero leave the computation as the problem's. The probes decide whether either is right."""
    example = param.example
    if not (param.required and isinstance(example, torch.Tensor) and example.ndim == 1
            and example.is_floating_point()):
        return []
    return [(-3.0, [fill, name]) for name, value in inputs.items() for fill in ("ones", "zeros")
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.ndim >= 2]


def shortlist(options: list[tuple[float, list[Any]]], keep: int = 5) -> list[tuple[float, list[Any]]]:
    """The best `keep` options, and leaving the parameter out (or None, or an identity vector) even when it scores
    lower: an optional parameter with an example still has to be able to stay at its default."""
    return options[:keep] + [o for o in options[keep:] if o[1][0] in ("default", "none", "ones", "zeros")]


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
    if kind == "none":
        # an optional parameter no example shows: its annotation names the kind (`top_k: int | None = None`
        # takes a problem's int init argument; `out_dtype: str | None = None` a name, never a size)
        named = [k for k in ("int", "float", "str") if re.search(rf"\b{k}\b", param.annotation)]
        if re.search(r"\b(list|tuple|dict|Sequence)\b", param.annotation):
            kind = "other"  # `sections: list[int] | None`: takes a problem's list, never a size
        elif len(named) == 1:
            kind = named[0]
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


def init_candidates(param: Param, problem_init: dict[str, Any], inputs: dict[str, Any],
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
    if kind == "str":  # the other modes its own problem uses (an activation: "silu", "gelu_tanh")
        options += [["const", v] for v in param.variants if isinstance(v, str)]
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
        # `has_bias` / `use_gate` switch the forward parameter of that name: on when it is mapped to an input
        flag = re.fullmatch(r"(?:has|use|with)_(\w+)", param.name)
        switched = arg_map.get(flag.group(1)) if flag else None
        if switched is not None and switched[0] == "input":
            options.insert(0, ["const", True])
        options += [["const", True], ["const", False]]
    if kind == "int" and param.required:
        # 1, the neutral size (a group, block or tile of one), last: a kernel that pads or groups reaches a
        # problem that does neither (e.g. a block-padded expert sort at block size 1 is a plain sort)
        options.append(["const", 1])
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
    if spec[0] in ("ones", "zeros"):  # a per-channel identity vector shaped by an input's last axis
        like = inputs[spec[1]]
        return (torch.ones if spec[0] == "ones" else torch.zeros)(like.shape[-1], dtype=like.dtype, device=like.device)
    return None
