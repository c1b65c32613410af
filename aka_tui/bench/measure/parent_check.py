"""The parent's own check of a worker's report: code the candidate cannot reach.

For every shape the worker reports as passed, the worker also sent the candidate's outputs of the checked cases,
sampled at positions the parent chose (`MeasureJob.sample_seed`). After the worker has finished, the parent picks
one case at random, builds the same seeded inputs, runs the problem's reference itself on the same device and
compares the samples (4× the problem's tolerance against the native reference, at most 1% of the sampled
elements off: a coarse, independent check; the worker's full check holds the precision). A passed shape with no
outputs, or with outputs the reference disagrees with, is `tampered`: its report did not come from an honest check.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
import threading
from dataclasses import replace
from typing import Any, Iterator

import torch

from aka_tui.bench.measure.cases import case_seeds, reference_model
from aka_tui.bench.measure.job import MeasureJob
from aka_tui.bench.measure.results import ShapeResult, StageError
from aka_tui.bench.measure.samples import Leaf, bad_elements, decode, parent_sampler
from aka_tui.bench.problem import unsettled
from aka_tui.bench.problem.fuzz import resolve_shape
from aka_tui.bench.problem.inputs import make_inputs, upcast_inputs
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.settled_order import import_reference
from aka_tui.bench.problem.tolerance import output_rms, row_atol, scaled_to

TOLERANCE_SCALE = 4.0
STRAY_FRACTION = 0.01
_LOCK = threading.Lock()  # the RNG is process-wide: one parent check at a time
_MODULES: dict[str, tuple[Any, Any]] = {}


def _modules(problem: Problem) -> tuple[Any, Any]:
    key = f"{problem.directory.resolve()}@{problem.content_hash}"
    if key not in _MODULES:
        _MODULES[key] = (import_reference(problem.reference_path, "parent_ref"), import_file(problem.input_path, "parent_inp"))
    return _MODULES[key]


def check_outcome(problem: Problem, job: MeasureJob, device: str, shapes: list[ShapeResult],
                  evidence: dict[str, list[dict[str, Any]]]) -> list[ShapeResult]:
    """The worker's results with every passed shape checked (`tampered` where the check fails)."""
    if not (job.candidate.is_file and job.hardening):
        return shapes
    return [_check_shape(problem, job, device, s, evidence.get(s.shape_id) or []) if s.passed else s for s in shapes]


def _tampered(result: ShapeResult, message: str) -> ShapeResult:
    return replace(result, status="tampered", error=StageError("parent check", "tampered", message),
                   timing=None, audit=None)


def _check_shape(problem: Problem, job: MeasureJob, device: str, result: ShapeResult,
                 evidence: list[dict[str, Any]]) -> ShapeResult:
    if not evidence:
        return _tampered(result, "reported as passed without the outputs of its checked cases")
    shape = resolve_shape(problem, result.shape_id)
    if shape is None:
        return _tampered(result, f"reported a shape the problem does not have ({result.shape_id})")
    item = evidence[secrets.randbelow(len(evidence))]  # the worker cannot know which case is checked
    seeds = case_seeds(problem, shape, job.cases, job.seeds, job.seed_salt)
    case, seed = int(item.get("case", -1)), int(item.get("seed", -1))
    if not 0 <= case < len(seeds) or seeds[case] != seed or len(evidence) != len(seeds):
        return _tampered(result, f"reported outputs for seeds the evaluator did not choose (case {case}, seed {seed})")
    try:
        expected, sampled, at_rows = _reference_samples(problem, job, device, shape, case, seed)
    except Exception as exc:  # the problem itself failed here: not the candidate's verdict
        return replace(result, verification=result.verification | {
            "parent_check": f"not run: the reference failed in the parent ({type(exc).__name__}: {exc})"[:300]})
    reported = [decode(leaf) for leaf in item.get("leaves", [])]
    if len(reported) != len(expected) or any(r.numel() != e.numel() for r, e in zip(reported, expected)):
        return _tampered(result, f"seed {seed}: the reported outputs do not have the reference's structure")
    checked = 0
    for j, (got, want, leaf, rows) in enumerate(zip(reported, expected, sampled, at_rows)):
        written = tol = problem.tolerance_for(leaf.dtype)
        if want.is_floating_point():
            tol = scaled_to(written, output_rms(want))  # as the worker's checks scale it (from the samples' RMS)
        atol = row_atol(written, tol, rows) if rows is not None and want.is_floating_point() else None
        bad = bad_elements(got, want.cpu(), tol, TOLERANCE_SCALE, atol)
        allowed = problem.max_mismatch_fraction + STRAY_FRACTION
        if got.numel() and not want.is_floating_point() and float(bad.to(torch.float64).mean()) > allowed:
            answers = _noisy_answers(problem, device, shape, seed, leaf)
            if answers is not None:  # a tie-break the reference itself makes either way (`unsettled.py`)
                bad = bad & ~unsettled.admissible(got, answers)
        checked += got.numel()
        if got.numel() and float(bad.to(torch.float64).mean()) > allowed:
            return _tampered(result, f"seed {seed}: the evaluator's own reference disagrees with the outputs the "
                                     f"worker reported ({int(bad.sum())} of {got.numel()} sampled elements of leaf {j} "
                                     "off): the worker's check was bypassed")
    return replace(result, verification=result.verification | {
        "parent_check": f"seed {seed}: {checked} sampled elements agree with the parent's reference"})


@contextlib.contextmanager
def _on_device(device: str) -> Iterator[None]:
    """The parent's reference runs: one at a time (the RNG is process-wide), on `device`, without gradients,
    the device's cached blocks returned after."""
    cuda = device.startswith("cuda")
    index = torch.device(device).index if cuda and ":" in device else (torch.cuda.current_device() if cuda else None)
    try:
        with _LOCK, torch.random.fork_rng(devices=[index] if cuda else []), torch.no_grad():
            with torch.cuda.device(index) if cuda else contextlib.nullcontext():
                yield
    finally:
        if cuda:
            torch.cuda.empty_cache()


def _noisy_answers(problem: Problem, device: str, shape: Any, seed: int, leaf: Leaf) -> torch.Tensor | None:
    """The reference's answers under rounding-level noise on the case's inputs (`unsettled.alternatives`, the
    float64 model where it runs) at the parent's positions of integer leaf `leaf`: [draws, K] on the CPU, or
    None when its runs fail."""
    ref_module, input_module = _modules(problem)
    try:
        with _on_device(device):
            inputs = make_inputs(problem, input_module, shape, device, seed)
            model = reference_model(problem, shape, ref_module, device)
            try:
                exact, given = copy.deepcopy(model).double(), upcast_inputs(inputs)
                answers = unsettled.alternatives(lambda x: exact(**x), given, seed)
            except Exception:  # no float64 run: the native one, as the worker's yardstick falls back
                answers = unsettled.alternatives(lambda x: model(**x), inputs, seed)
            found = answers.get(leaf.name)
            return None if found is None else found.index_select(1, leaf.index.to(found.device)).cpu()
    except Exception:  # the problem's failure here: the samples are judged exactly
        return None


def _reference_samples(problem: Problem, job: MeasureJob, device: str, shape: Any, case: int,
                       seed: int) -> tuple[list[torch.Tensor], list[Leaf], list[torch.Tensor | None]]:
    """The native reference of one case, computed here, at the parent's sample positions (values, the sampled
    leaves, and the row RMS there)."""
    ref_module, input_module = _modules(problem)
    with _on_device(device):
        inputs = make_inputs(problem, input_module, shape, device, seed)
        native = reference_model(problem, shape, ref_module, device)(**inputs)
        sampler = parent_sampler(native, job.sample_seed, shape.shape_id, case)
        values = [v.cpu() for v in sampler.take(native)]
        at_rows = [r.cpu() if r is not None else None for r in sampler.row_rms()]
        del inputs, native
    return values, sampler.leaves, at_rows
