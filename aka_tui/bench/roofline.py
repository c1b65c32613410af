"""Roofline: semantic work W (FLOPs) and traffic Q (bytes) per shape, and T_SOL on a hardware profile."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_leaves

from aka_tui.bench.dtypes import execution_path
from aka_tui.bench.flop_count import FlopCountingMode, tensor_bytes_once
from aka_tui.bench.hardware import HardwareProfile
from aka_tui.bench.problem import Problem, RooflineEntry, Shape, roofline_inputs_hash

ROOFLINE_FILE_VERSION = 1


@dataclass(frozen=True)
class RooflineBound:
    """Speed-of-light time of one shape on one profile, and which ceiling sets it."""

    t_sol_s: float
    t_compute_s: float
    t_memory_s: float
    bottleneck: str  # "compute" | "memory"
    arithmetic_intensity: float  # FLOP per byte


def bound(entry: RooflineEntry, profile: HardwareProfile) -> RooflineBound:
    """T_SOL = max(W / P_peak[path], Q / B_hbm)."""
    t_compute = entry.flops / profile.peak_flops_per_s(entry.path) if entry.flops and entry.path != "none" else 0.0
    t_memory = entry.bytes_total / profile.bandwidth_bytes_per_s
    intensity = entry.flops / entry.bytes_total if entry.bytes_total else float("inf")
    return RooflineBound(max(t_compute, t_memory), t_compute, t_memory,
                         "compute" if t_compute > t_memory else "memory", intensity)


def measure_entry(problem: Problem, shape: Shape, reference_module: Any, make_inputs: Callable[[], dict],
                  build_model: Callable[[], torch.nn.Module]) -> RooflineEntry:
    """Run the reference once under the FLOP counter and size its inputs and outputs.

    `make_inputs` builds the shape's inputs on the chosen device; roofline hooks in the reference module
    (`roofline_flops`, `roofline_bytes`) override the generic counts.
    """
    inputs = make_inputs()
    model = build_model()
    counter = FlopCountingMode()
    with torch.no_grad(), counter:
        outputs = model(**inputs)
    source = "counted"
    flops = counter.total
    hook_flops = getattr(reference_module, "roofline_flops", None)
    if callable(hook_flops):
        flops = int(hook_flops(inputs, outputs, **shape.init_kwargs))
        source = "hook"
    hook_bytes = getattr(reference_module, "roofline_bytes", None)
    if callable(hook_bytes):
        read, written = hook_bytes(inputs, outputs, **shape.init_kwargs)
        source = "hook"
    else:
        in_tensors = [t for t in tree_leaves(inputs) if isinstance(t, torch.Tensor)]
        in_tensors += list(model.parameters()) + list(model.buffers())
        out_tensors = [t for t in tree_leaves(outputs) if isinstance(t, torch.Tensor)]
        read = tensor_bytes_once(in_tensors)
        written = tensor_bytes_once(out_tensors, exclude=in_tensors)
    return RooflineEntry(float(flops), float(read), float(written), execution_path(shape.dtype), source)


def write_cache(problem: Problem) -> None:
    """Write `problem.roofline` to the problem's roofline.json (native problems only)."""
    if problem.source_format != "native":
        return
    data = {
        "version": ROOFLINE_FILE_VERSION,
        "inputs_hash": roofline_inputs_hash(problem.directory),
        "note": "W = FLOPs, Q = bytes read + written once; hardware-independent. Refresh: aka roofline "
                + problem.name,
        "shapes": {sid: problem.roofline[sid].to_json() for sid in problem.shapes if sid in problem.roofline},
    }
    problem.roofline_path.write_text(json.dumps(data, indent=2) + "\n")
