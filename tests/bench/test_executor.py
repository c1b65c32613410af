"""The local executor on the CPU: jobs spread over slots, results streamed with their placement, GPU locks."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions
from aka_tui.bench.evaluator.gpu_lock import exclusive_gpu
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.errors import EvaluationError
from aka_tui.executors.base import EvalJob, make_executor
from aka_tui.executors.local import LocalExecutor
from tests.conftest import PROBLEMS


def _options() -> EvalOptions:
    return EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)


def test_two_cpu_slots_run_jobs_and_record_placement() -> None:
    executor = LocalExecutor("cpu", cpu_workers=2)
    assert [s["slot"] for s in executor.describe()] == [0, 1]
    jobs = [EvalJob("rms_norm", load_problem(PROBLEMS / "rms_norm"),
                    CandidateSpec.file(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py"), _options()),
            EvalJob("silu", load_problem(PROBLEMS / "silu_and_mul"), CandidateSpec("eager"), _options())]
    seen: list[str] = []
    outcomes = list(executor.run(jobs, on_shape=lambda job, result: seen.append(job.key)))
    assert sorted(o.job.key for o in outcomes) == ["rms_norm", "silu"]
    assert set(seen) == {"rms_norm", "silu"}
    for outcome in outcomes:
        assert outcome.placement["executor"] == "local" and outcome.placement["device"] == "cpu"
        assert outcome.result.provenance["placement"] == outcome.placement
        assert all(s.passed for s in outcome.result.shapes)


def test_a_failing_job_surfaces_in_the_caller(tmp_path: Path) -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    bad = EvalJob("x", problem, CandidateSpec("eager"), EvalOptions(device="cpu", tier="nonexistent-tier"))
    with pytest.raises(EvaluationError, match="nonexistent-tier"):
        list(LocalExecutor("cpu").run([bad]))


def test_unknown_executor_and_too_many_gpus_are_clear_errors() -> None:
    with pytest.raises(EvaluationError, match="unknown executor"):
        make_executor("slurm")
    with pytest.raises(EvaluationError, match="no CUDA device|GPU"):
        LocalExecutor("cuda", gpus=2)


def test_gpu_lock_is_exclusive(tmp_path: Path) -> None:
    order: list[str] = []
    holding = threading.Event()

    def second() -> None:
        holding.wait()
        with exclusive_gpu("gpu-test", tmp_path):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    with exclusive_gpu("gpu-test", tmp_path):
        holding.set()
        thread.join(timeout=0.5)
        assert thread.is_alive(), "the second holder got the lock while the first held it"
        order.append("first")
    thread.join(timeout=5)
    assert order == ["first", "second"]
