"""A call's inputs and output belong to the plan: the loop that makes the calls holds none of them while the plan
goes on.

The plan builds a case between two calls (the audited case after the correctness calls), and a case's reference
can need the device's memory to the last gigabyte: on the H200, a 256-expert fp8 MoE reference ran out of memory
while the copy of case 0's inputs, given to the correctness call, was still referenced by the loop (10.5 GiB)."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder
from aka_tui.bench.measure.calls import Call, called, run_calls
from aka_tui.bench.measure.cases import ShapeCases, audit_seed, case_seeds
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.module_loading import import_file

REPO = Path(__file__).resolve().parents[2]


def test_the_loop_holds_neither_inputs_nor_output_of_a_finished_call() -> None:
    alive: list[tuple[bool, bool]] = []

    def plan() -> Any:
        inputs = {"x": torch.ones(8)}
        given = weakref.ref(inputs["x"])
        out = yield from called(Call(inputs, "first"))
        made = weakref.ref(out)
        assert torch.equal(out, torch.full((8,), 2.0))
        del inputs, out
        alive.append((given() is not None, made() is not None))  # what a case built here would find allocated
        yield from called(Call({"x": torch.zeros(2)}, "second"))

    run_calls(lambda x: x * 2, plan())
    assert alive == [(False, False)]


def test_the_audited_case_is_built_after_the_checked_calls_inputs_are_gone() -> None:
    problem = load_problem(REPO / "problems" / "rms_norm")
    shape = problem.shapes["smoke_t7_h1000_fp16"]
    ref_module = import_file(problem.reference_path, "released_ref")
    input_module = import_file(problem.input_path, "released_inp")
    cases = ShapeCases(problem, shape, "cpu", ref_module, input_module, case_seeds(problem, shape, 1), False, 0, 1,
                       audit_seed=audit_seed(problem, shape))
    received: list[weakref.ref[torch.Tensor]] = []
    made: list[weakref.ref[torch.Tensor]] = []

    def candidate(**inputs: Any) -> Any:
        received.extend(weakref.ref(v) for v in inputs.values() if isinstance(v, torch.Tensor))
        out = cases.ref_model(**inputs)
        made.append(weakref.ref(out))
        return out

    still_held: dict[int, int] = {}
    outputs_held: dict[int, int] = {}
    build = cases._build

    def watched_build(index: int) -> Any:
        still_held[index] = sum(ref() is not None for ref in received)
        outputs_held[index] = sum(ref() is not None for ref in made)
        return build(index)

    cases._build = watched_build  # type: ignore[method-assign]
    plan = ShapePlan(problem, cases, PlanOptions(device="cpu", timing=False, watch_threads=False),
                     Timers.capture(), TritonLaunchRecorder())
    run_calls(candidate, plan.run())
    assert cases.audit_index == 1 and received, "the plan checks case 0, then builds the audited case"
    assert still_held == {0: 0, 1: 0}, "a checked call's inputs were still alive while the next case was built"
    assert made and outputs_held == {0: 0, 1: 0}, "a checked call's output was still alive at the next build"
