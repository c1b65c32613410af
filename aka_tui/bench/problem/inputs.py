"""Build a shape's inputs reproducibly on a device, and the float64 copies the exact reference uses."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import torch

from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.problem.module_loading import DeviceRedirectMode
from aka_tui.errors import ProblemFormatError


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def make_inputs(problem: Problem, input_module: ModuleType, shape: Shape, device: str, seed: int) -> dict[str, Any]:
    """Call `_make_inputs(**input_kwargs, device=...)` under `seed`; tensors end up on `device`."""
    fn = input_module._make_inputs
    kwargs = dict(shape.input_kwargs)
    params = inspect.signature(fn).parameters
    if "device" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kwargs["device"] = device
    seed_everything(seed)
    target = torch.device(device)
    if target.type != "cuda":
        with DeviceRedirectMode(target):
            inputs = fn(**kwargs)
    else:
        inputs = fn(**kwargs)
    if not isinstance(inputs, dict):
        raise ProblemFormatError(
            f"{problem.name}: input.py: _make_inputs returned {type(inputs).__name__}, expected a dict of tensors "
            f"({problem.input_path})")
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.device.type != target.type:
            inputs[name] = value.to(target)
    return inputs


def clone_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equal (a NaN equals itself, -0.0 differs from 0.0)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def modified_inputs(before: dict[str, Any], after: dict[str, Any]) -> frozenset[str]:
    """Names of the tensors a call wrote into: `after` is the copy of `before` it was given. How the formats
    without a `mutates_inputs` field (the published one) say that a reference works in place."""
    return frozenset(name for name, value in before.items()
                     if isinstance(value, torch.Tensor) and isinstance(after.get(name), torch.Tensor)
                     and not same_bits(value, after[name]))


def upcast_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """Every floating tensor as float64 (for the exact reference run)."""
    return {k: v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}


def timing_input_sets(problem: Problem, input_module: ModuleType, shape: Shape, device: str, count: int,
                      memory_fraction: float = 0.25) -> list[dict[str, Any]]:
    """The evaluator's rotating timing inputs for scripts that time outside the engine: the engine times on its
    first correctness cases (seeds derived per case, `measure/cases.py`), so these are the same tensors; fewer
    sets when `count` of them would take more than `memory_fraction` of the GPU's free memory."""
    from aka_tui.bench.problem.seeds import derive_seed

    sets = []
    for i in range(count):
        sets.append(make_inputs(problem, input_module, shape, device, derive_seed(problem.name, shape.shape_id, i)))
        if i == 0 and device.startswith("cuda"):
            size = sum(t.numel() * t.element_size() for t in sets[0].values() if isinstance(t, torch.Tensor))
            free, _ = torch.cuda.mem_get_info()
            if size * count > free * memory_fraction:
                break
    return sets
