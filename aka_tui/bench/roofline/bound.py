"""Roofline: semantic work W (FLOPs) and traffic Q (bytes) per shape, and T_SOL on a hardware profile."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_leaves

from aka_tui.bench.problem.dtypes import execution_path
from aka_tui.bench.problem.model import Problem, RooflineEntry, Shape
from aka_tui.bench.problem.native import roofline_inputs_hash
from aka_tui.bench.roofline.flop_count import flop_counting_mode, tensor_bytes_once
from aka_tui.bench.roofline.hardware import HardwareProfile

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
    """T_SOL = max(Σ W_path / P_peak[path], Q / B_hbm); integer work (path "none") is bandwidth-only."""
    t_compute = sum(flops / profile.peak_flops_per_s(path) for path, flops in entry.work_by_path().items()
                    if flops and path != "none")
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
    counter = flop_counting_mode()
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
    counted = RooflineEntry(float(flops), float(read), float(written), execution_path(shape.dtype), source)
    published = problem.roofline_partial.get(shape.shape_id)
    return complete_published(published, counted) if published else counted


def complete_published(published: dict[str, Any], counted: RooflineEntry) -> RooflineEntry:
    """A published entry with null or absent values, finished with our counts (the source names which)."""
    flops = published.get("flops_by_path")
    read, written = published.get("bytes_read"), published.get("bytes_written")
    filled = [what for what, value in (("W", flops), ("Q_read", read), ("Q_write", written)) if value is None]
    return RooflineEntry.from_paths(
        flops if flops is not None else counted.work_by_path(),
        read if read is not None else counted.bytes_read,
        written if written is not None else counted.bytes_written,
        counted.path, "atrex+counted " + ",".join(filled))


def write_cache(problem: Problem) -> None:
    """Keep counted rooflines: in a native problem's roofline.json; for a published (read-only) directory,
    the entries counted here go to a per-user cache keyed by the problem's inputs hash."""
    if problem.source_format != "native":
        _write_counted_cache(problem)
        return
    data = {
        "version": ROOFLINE_FILE_VERSION,
        "inputs_hash": roofline_inputs_hash(problem.directory),
        "note": "W = FLOPs, Q = bytes read + written once; hardware-independent. Refresh: aka roofline "
                + problem.name,
        "shapes": {sid: problem.roofline[sid].to_json() for sid in problem.shapes if sid in problem.roofline},
    }
    problem.roofline_path.write_text(json.dumps(data, indent=2) + "\n")


def _write_counted_cache(problem: Problem) -> None:
    from aka_tui.bench.problem.atrex import counted_cache_path

    counted = {sid: e.to_json() for sid, e in problem.roofline.items() if e.source != "atrex"}
    if not counted:
        return
    inputs_hash = roofline_inputs_hash(problem.directory)
    path = counted_cache_path(problem.name, inputs_hash)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": ROOFLINE_FILE_VERSION, "inputs_hash": inputs_hash,
                               "directory": str(problem.directory), "shapes": counted}, indent=1) + "\n")
    tmp.replace(path)
