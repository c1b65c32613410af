"""A transfer's own kernel on the probes: a match is found on a reference kernel's semantics (its problem's
PyTorch reference), which can accept sizes the kernel itself refuses (a group width that must be a power of
two, a head size it does not tile). Before a match becomes the start, its adapted candidate runs on the small
probes under Triton's interpreter and must reproduce their outputs; a kernel that raises or disagrees is passed
over for the next match."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from aka_tui.agent.probe import Probe, flatten_outputs, output_matches
from aka_tui.bench.problem.inputs import clone_inputs
from aka_tui.bench.problem.model import Problem

CHECK_ELEMENTS = 1 << 16  # probes whose inputs hold at most this many elements run (the interpreter is slow)


def _elements(probe: Probe) -> int:
    return sum(v.numel() for v in probe.inputs.values() if isinstance(v, torch.Tensor))


def check_probes(probes: list[Probe]) -> list[Probe]:
    """The probes small enough to run interpreted; the smallest one when none is."""
    small = [p for p in probes if _elements(p) <= CHECK_ELEMENTS]
    return small or sorted(probes, key=_elements)[:1]


def adapted_kernel_fails(problem: Problem, source: str, probes: list[Probe]) -> str | None:
    """None when the adapted candidate `source` reproduces every small probe's outputs; else why not (one
    line)."""
    from aka_tui.agent.own_semantics import import_interpreted

    with tempfile.TemporaryDirectory(prefix="aka-transfer-") as tmp:
        path = Path(tmp) / "transferred_candidate.py"
        path.write_text(source)
        try:
            module = import_interpreted(path)
        except Exception as exc:
            return f"does not import: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    for probe in check_probes(probes):
        try:
            model = module.Model(**probe.init)
            with torch.no_grad():
                produced, _ = flatten_outputs(model(**clone_inputs(probe.inputs)))
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            return f"raises on {probe.shape.shape_id}: {type(exc).__name__}: {first[:200]}"
        if len(produced) != len(probe.outputs) or not all(
                output_matches(problem.tolerance_for, e, a) for e, a in zip(probe.outputs, produced)):
            return f"disagrees with the reference on {probe.shape.shape_id}"
    return None
