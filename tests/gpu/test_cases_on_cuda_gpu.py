"""On a CUDA GPU: the case-building paths that only a GPU takes (inputs parked on the host while the reference
runs, found by the device's available memory) and integer tie-breaks checked through the timed calls' samples
and the parent's own check on the device."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.measure import cases
from aka_tui.bench.measure.audit import TritonLaunchRecorder
from aka_tui.bench.measure.calls import run_calls
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.inputs import same_bits
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.tolerance import flatten_outputs
from tests.bench.test_unsettled_integers import _CANDIDATE, BODIES
from tests.bench.test_unsettled_integers import PROBLEM as TIED

pytestmark = pytest.mark.gpu

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]


def test_inputs_parked_on_the_host_make_the_same_case_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = load_problem(DATA / "unseen" / "paged_row_scatter")
    shape = problem.shapes_for("all")[-1]
    modules = import_file(problem.reference_path, "ref_parked_gpu"), import_file(problem.input_path, "inp_parked_gpu")

    def build() -> cases.Case:
        return cases.ShapeCases(problem, shape, "cuda", *modules, cases.case_seeds(problem, shape, 1), True, 1,
                                2).case(0)

    assert cases.available_gpu_bytes() >= torch.cuda.mem_get_info()[0]
    plain = build()
    hosted: list[bool] = []
    park = cases._parked

    def spied(inputs: dict[str, Any], device: str) -> dict[str, Any] | None:
        host = park(inputs, device)
        hosted.append(host is not None)
        return host

    monkeypatch.setattr(cases, "_parked", spied)
    monkeypatch.setattr(cases, "PARK_SHARE", 0.0)
    parked = build()
    assert hosted == [True], "the inputs were not parked on the host"
    assert sorted(plain.ref_written) == sorted(parked.ref_written) == ["key_cache", "value_cache"]
    for name, value in plain.inputs.items():
        assert same_bits(value, parked.inputs[name]), name
        assert not isinstance(value, torch.Tensor) or parked.inputs[name].device.type == "cuda"
    for name in plain.ref_written:
        assert same_bits(plain.ref_written[name], parked.ref_written[name]), name
    assert all(same_bits(a, b) for a, b in zip(plain.ref_native, parked.ref_native))


def test_the_audited_case_is_built_with_the_checked_calls_memory_given_back() -> None:
    problem = load_problem(REPO / "problems" / "rms_norm")
    shape = problem.shapes["llama3_70b_prefill_t8192_h8192"]
    ref_module = import_file(problem.reference_path, "released_ref_gpu")
    input_module = import_file(problem.input_path, "released_inp_gpu")
    shape_cases = cases.ShapeCases(problem, shape, "cuda", ref_module, input_module,
                                   cases.case_seeds(problem, shape, 1), False, 0, 1,
                                   audit_seed=cases.audit_seed(problem, shape))
    received: list[weakref.ref[torch.Tensor]] = []

    def candidate(**inputs: Any) -> Any:
        received.extend(weakref.ref(v) for v in inputs.values() if isinstance(v, torch.Tensor))
        return shape_cases.ref_model(**inputs)

    held: dict[int, tuple[int, int]] = {}
    build = shape_cases._build

    def watched_build(index: int) -> Any:
        held[index] = (sum(ref() is not None for ref in received), torch.cuda.memory_allocated())
        return build(index)

    shape_cases._build = watched_build  # type: ignore[method-assign]
    plan = ShapePlan(problem, shape_cases, PlanOptions(device="cuda", timing=False, watch_threads=False),
                     Timers.capture(), TritonLaunchRecorder())
    run_calls(candidate, plan.run())
    case0 = shape_cases.case(0)
    inputs = sum(t.numel() * t.element_size() for t in case0.inputs.values() if isinstance(t, torch.Tensor))
    output = sum(v.numel() * v.element_size() for _, v in flatten_outputs(case0.ref_native))
    assert held[1][0] == 0, "a checked call's inputs were alive while the audited case was built"
    # Case 0's inputs and reference output: 256 MiB at this shape; with the last call's output (which the loop
    # passed into the plan until session 51) 384 MiB on an H100, and with the checked call's inputs 512.
    assert held[1][1] - held[0][1] < inputs + output + (4 << 20), "more was held at the audited build"


@pytest.mark.parametrize("name, passes", [("ties_broken_the_other_way", True), ("two_slots_swapped", False)])
def test_integer_tie_breaks_on_the_gpu(name: str, passes: bool, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(_CANDIDATE.format(body=BODIES[name]))
    options = EvalOptions(device="cuda", tier="all", cases=2, input_sets=2, fuzz=0)
    result = evaluate_candidate(load_problem(TIED), CandidateSpec.file(path), options)
    statuses = [s.status for s in result.shapes]
    if passes:
        assert statuses and all(s == "passed" for s in statuses), [s.error for s in result.shapes]
        assert any(s.verification.get("integer_tie_breaks") for s in result.shapes)
    else:
        assert "wrong_output" in statuses, statuses
