"""On a CUDA GPU: real timing, real kernels, contained illegal memory accesses, calibration."""

from __future__ import annotations

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import detect_profile
from aka_tui.bench.scoring.score import score_op
from tests.conftest import CANDIDATES, PROBLEMS

pytestmark = pytest.mark.gpu


def test_correct_triton_rms_norm_is_real_and_timed_with_events() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    candidate = CandidateSpec.file(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py")
    result = evaluate_candidate(problem, candidate, EvalOptions(device="cuda", tier="full", compare_eager=True))
    op = score_op(problem, result, detect_profile("cuda"))
    assert op.correct and op.real, [(s.shape_id, s.error, s.audit) for s in result.shapes]
    for shape in result.shapes:
        if shape.fuzz:
            continue  # fuzzed shapes are checked for correctness only, never timed
        assert shape.timing is not None and shape.timing.timer == "cuda_events" and shape.timing.l2_flush_bytes > 0
    assert 0 < op.s_op < 1.5
    launch_ms = result.provenance["empty_launch_ms"]
    assert launch_ms is not None and 0 < launch_ms < 0.1
    assert all(s.s_launch >= s.s for s in op.shapes)


def test_illegal_memory_access_is_contained_to_its_shape() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    shapes = ["llama3_70b_prefill_t8192_h8192", "llama3_8b_decode_t256_h4096"]
    options = EvalOptions(device="cuda", tier="full", shape_ids=shapes, cases=1)
    result = evaluate_candidate(problem, CandidateSpec.file(CANDIDATES / "rms_norm_illegal_access.py"), options)
    by_id = {s.shape_id: s for s in result.shapes}
    assert by_id[shapes[0]].status in ("cuda_error", "crashed"), by_id[shapes[0]]
    assert by_id[shapes[1]].passed, by_id[shapes[1]].error


def test_torch_fallback_is_caught_on_the_gpu() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    options = EvalOptions(device="cuda", tier="full", shape_ids=["llama3_8b_decode_t256_h4096"], cases=1)
    result = evaluate_candidate(problem, CandidateSpec.file(CANDIDATES / "rms_norm_torch_fallback.py"), options)
    op = score_op(problem, result, detect_profile("cuda"))
    assert op.correct and not op.real and op.s_op == 0 and op.s_raw_op > 0


def test_local_executor_pins_one_evaluation_per_gpu() -> None:
    import torch

    from aka_tui.executors.base import EvalJob
    from aka_tui.executors.local import LocalExecutor

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    executor = LocalExecutor("cuda")
    names = ["rms_norm", "silu_and_mul", "rope", "layer_norm"]
    jobs = [EvalJob(n, load_problem(PROBLEMS / n), CandidateSpec("eager"), EvalOptions(device="cuda", tier="full"))
            for n in names]
    outcomes = list(executor.run(jobs))
    assert sorted(o.job.key for o in outcomes) == sorted(names)
    assert {o.placement["gpu"] for o in outcomes} == set(e["gpu"] for e in executor.describe())
    for outcome in outcomes:
        assert all(s.passed for s in outcome.result.shapes), outcome.job.key
        assert outcome.result.provenance["placement"]["node"]
