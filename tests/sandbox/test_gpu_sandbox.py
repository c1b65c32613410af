"""On a GPU: the hostile corpus with CUDA workers (device nodes bound into the sandbox), and a Triton kernel still
compiled, checked, attributed and timed with CUDA events inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem
from tests.conftest import PROBLEMS, REPO
from tests.sandbox.harness import CASES
from tests.sandbox.test_hostile_corpus import MECHANISM, WHY_NOT, check, hostile_environment, run_case

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(MECHANISM != "bwrap", reason=f"bubblewrap cannot run here: {WHY_NOT}")]


def test_a_triton_kernel_is_timed_inside_the_sandbox() -> None:
    problem = load_problem(PROBLEMS / "silu_and_mul")
    shape = problem.shapes_for("full")[0].shape_id
    options = EvalOptions(device="cuda", tier="full", cases=2, shape_ids=[shape],
                          limits=WorkerLimits(sandbox="bwrap"))
    result = evaluate_candidate(problem, CandidateSpec.file(REPO / "kb" / "family" / "activation" / "silu_and_mul.py"),
                                options)
    (shape_result,) = result.shapes
    assert shape_result.passed, shape_result.error
    assert shape_result.audit is not None and shape_result.audit.real, shape_result.audit
    assert shape_result.timing is not None and shape_result.timing.timer == "cuda_events"
    assert shape_result.timing.median_ms > 0 and result.provenance["sandbox"] == "bwrap"
    print(f"{shape}: {shape_result.timing.median_ms * 1e3:.2f} us in the sandbox "
          f"(saturated {shape_result.timing.saturated})")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stem)
def test_hostile_case_on_cuda(case: Path, tmp_path: Path) -> None:
    with hostile_environment() as (listener, repo_before):
        run = run_case(case, "bwrap", tmp_path, listener.port, device="cuda")
        check(case, "bwrap", run, listener, repo_before)
