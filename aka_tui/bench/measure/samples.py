"""Output samples: where an output is read, how a sample is checked against the reference's, how it travels.

Every call the engine makes is sampled right after it returns (outside the timed interval): the same element
positions of every output leaf, chosen per case from a seed, so a timed call's output is compared with the
reference for its input set without keeping whole outputs. The outputs of the checked cases are also sampled at
positions the parent chose (`MeasureJob.sample_seed`) and sent with the result, for the parent's own check.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from aka_tui.bench.problem import unsettled
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.bench.problem.tolerance import (
    Tolerance,
    at_overflow_edge,
    check_plain_container,
    check_plain_tensor,
    flatten_outputs,
    output_rms,
    past_overflow_edge,
    row_atol,
    row_length,
    rows_rms,
    scaled_to,
    structure_of,
)

TIMED_SAMPLE = 4096  # elements per output leaf read from every timed call
PARENT_SAMPLE = 1024  # elements per output leaf sent to the parent per checked case


def positions(numel: int, count: int, seed: int) -> torch.Tensor:
    """Sorted distinct flat positions in [0, numel): all of them when numel <= count, else `count` seeded
    ones that always include the first and the last element (tails are where kernels go wrong)."""
    if numel <= count:
        return torch.arange(numel, dtype=torch.int64)
    drawn = np.random.default_rng(seed).integers(0, numel, size=count - 2, dtype=np.int64)
    chosen = np.unique(np.concatenate([drawn, np.array([0, numel - 1], dtype=np.int64)]))
    return torch.from_numpy(chosen)


class SampleMismatch(Exception):
    """A call's output does not have the reference's structure, shapes, dtypes, device or plain layout."""


@dataclass(frozen=True)
class Leaf:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    index: torch.Tensor  # flat positions on the output's device
    row_rms: torch.Tensor | None = None  # the reference's RMS of each position's row (`tolerance.row_atol`)


class Sampler:
    """Where one output structure is sampled (per leaf), fixed by the reference output of a case."""

    def __init__(self, reference: Any, count: int, seed_of: Callable[[int], int], with_rows: bool = True) -> None:
        """`with_rows`: keep the reference's row RMS at the positions (`row_rms`), for the checks that compare
        samples; off where the samples only travel (the worker's side of the parent's check)."""
        self.structure = structure_of(reference)
        self.leaves: list[Leaf] = []
        for j, (name, leaf) in enumerate(flatten_outputs(reference)):
            index = positions(leaf.numel(), count, seed_of(j)).to(leaf.device)
            row = row_length(leaf.shape) if with_rows and leaf.is_floating_point() else 0
            at_rows = rows_rms(leaf, row).index_select(0, index // row) if row and leaf.numel() else None
            self.leaves.append(Leaf(name, tuple(leaf.shape), leaf.dtype, leaf.device, index, at_rows))

    def row_rms(self) -> list[torch.Tensor | None]:
        """Per leaf, the reference's row RMS at the sample positions (None for outputs without rows)."""
        return [leaf.row_rms for leaf in self.leaves]

    def take(self, output: Any) -> list[torch.Tensor]:
        """The output's values at the sample positions (a device-side gather per leaf, no sync)."""
        container = check_plain_container(output)
        if container:
            raise SampleMismatch(container)
        if structure_of(output) != self.structure:
            raise SampleMismatch(f"output structure {structure_of(output)} != reference {self.structure}")
        values = []
        for leaf, (name, tensor) in zip(self.leaves, flatten_outputs(output)):
            problem = check_plain_tensor(name, tensor)
            if problem:
                raise SampleMismatch(problem)
            if tuple(tensor.shape) != leaf.shape or tensor.dtype != leaf.dtype or tensor.device != leaf.device:
                raise SampleMismatch(f"{name} is {tuple(tensor.shape)} {tensor.dtype} on {tensor.device}, reference "
                                     f"{leaf.shape} {leaf.dtype} on {leaf.device}")
            flat = tensor.detach().reshape(-1)
            values.append(flat.index_select(0, leaf.index) if leaf.index.numel() else flat[:0].clone())
        return values


def timed_sampler(reference: Any, secret: int, case: int) -> Sampler:
    """The sampler of the timed calls on one case (positions from the worker's own secret)."""
    return Sampler(reference, TIMED_SAMPLE, lambda j: derive_seed(str(secret), "timed", case, f"leaf{j}"))


def parent_sampler(reference: Any, sample_seed: int, shape_id: str, case: int, with_rows: bool = True) -> Sampler:
    """The sampler of what the parent checks for one case (the parent recomputes the same positions)."""
    return Sampler(reference, PARENT_SAMPLE, lambda j: derive_seed(str(sample_seed), shape_id, case, f"leaf{j}"),
                   with_rows)


def bad_elements(candidate: torch.Tensor, expected: torch.Tensor, tol: Tolerance, scale: float = 1.0,
                 atol: torch.Tensor | None = None) -> torch.Tensor:
    """Per element: outside `scale` × (atol + rtol·|expected|); a non-finite value must be reproduced exactly,
    save at the format's overflow edges (`at_overflow_edge`, `past_overflow_edge`); integers must be equal.
    `candidate` may carry leading call dimensions over `expected`; `atol` (per element of `expected`) replaces
    `tol.atol`."""
    if not (expected.is_floating_point() or expected.is_complex()):
        return candidate != expected.to(candidate.dtype)
    c = candidate.to(torch.float64)
    x = expected.to(device=c.device, dtype=torch.float64)
    finite = torch.isfinite(x)
    same = (c == x) | (torch.isnan(c) & torch.isnan(x))
    if candidate.is_floating_point() and not bool(finite.all()):
        same = same | at_overflow_edge(c, x, None, tol, candidate.dtype)
    absolute = tol.atol if atol is None else atol.to(device=c.device, dtype=torch.float64)
    bound = scale * (absolute + tol.rtol * torch.where(finite, x.abs(), torch.zeros_like(x)))
    within = torch.where(finite, (c - x).abs() <= bound, same)
    if candidate.is_floating_point() and not bool(torch.isfinite(c).all()):
        within = within | (finite & past_overflow_edge(c, x, None, tol, candidate.dtype))
    return ~within


def failing_calls(samples: list[list[torch.Tensor]], expected: list[torch.Tensor], tolerance_for: Any,
                  max_mismatch_fraction: float, row_rms: list[torch.Tensor | None] | None = None,
                  answers_for: Callable[[int], torch.Tensor | None] | None = None) -> list[tuple[int, str]]:
    """(call index, why) for every call whose sample is outside tolerance, or all zero where the reference is not.

    `samples[i]` is call i's list of leaf samples; `expected` the reference's (float64 where there is one);
    `row_rms` the sampler's (`Sampler.row_rms`), for the per-row atol the full comparison uses; `answers_for(j)`
    the reference's answers under input noise at leaf j's positions ([draws, K]), asked for only where an
    integer leaf's sample differs (`unsettled.py`)."""
    if not samples:
        return []
    failures: dict[int, str] = {}
    for j, ref in enumerate(expected):
        if ref.numel() == 0:
            continue
        stacked = torch.stack([s[j] for s in samples])  # [calls, K]
        written = tolerance_for(stacked.dtype)
        tol, atol = written, None
        if ref.is_floating_point():
            tol = scaled_to(written, output_rms(ref))  # the sample's RMS stands for the output's
            rows = row_rms[j] if row_rms is not None else None
            atol = row_atol(written, tol, rows) if rows is not None else None
        bad = bad_elements(stacked, ref, tol, atol=atol)
        if answers_for is not None and not ref.is_floating_point() and bool(bad.any()):
            answers = answers_for(j)
            if answers is not None:
                bad = bad & ~unsettled.admissible(stacked, answers)
        fraction = bad.to(torch.float64).mean(dim=1)
        zero = (stacked == 0).all(dim=1) & bool((ref != 0).any())
        for i in torch.nonzero((fraction > max_mismatch_fraction) | zero).flatten().tolist():
            if i not in failures:
                why = "all zero" if bool(zero[i]) else f"{float(fraction[i]):.1%} of sampled elements outside tolerance"
                failures[i] = f"leaf {j}: {why}"
    return sorted(failures.items())


def encode(values: torch.Tensor) -> dict[str, str]:
    """A sample as JSON-safe data: float64 (or int64 for integer outputs) bytes in base64."""
    exact = values.is_floating_point() or values.is_complex()
    array = values.detach().to("cpu", torch.float64 if exact else torch.int64).numpy()
    return {"dtype": "float64" if exact else "int64", "data": base64.b64encode(array.tobytes()).decode()}


def decode(data: dict[str, str]) -> torch.Tensor:
    dtype = np.float64 if data["dtype"] == "float64" else np.int64
    return torch.from_numpy(np.frombuffer(base64.b64decode(data["data"]), dtype=dtype).copy())
