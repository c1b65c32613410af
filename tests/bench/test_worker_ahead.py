"""Workers started ahead: the next evaluation's worker does its imports while another evaluation runs, and is
sent its job only when its evaluation begins (CPU; on a GPU the executor does this for every next operator)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

import aka_tui.bench.evaluator.evaluate as evaluate
from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate, start_worker_ahead
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.evaluator.worker_process import start_ahead
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.executors.base import EvalJob
from aka_tui.executors.local import LocalExecutor
from tests.conftest import PROBLEMS

OPTIONS = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0,
                      limits=WorkerLimits(startup_s=120, per_shape_s=120))
SILU = PROBLEMS / "silu_and_mul"
CANDIDATE = next(iter(sorted(SILU.glob("solutions/correct/*.py"))))


@pytest.fixture(autouse=True)
def ahead_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers are started ahead on a GPU only; here on the CPU too."""
    monkeypatch.setattr(evaluate, "starts_ahead", lambda device: True)


def _started(problem: Path = SILU):  # type: ignore[no-untyped-def]
    worker = start_worker_ahead(load_problem(problem), CandidateSpec.file(CANDIDATE), OPTIONS)
    assert worker is not None
    return worker


def _passes(result) -> None:  # type: ignore[no-untyped-def]
    assert result.compiled and result.shapes and all(s.passed for s in result.shapes), result.compile_error


def test_a_worker_started_ahead_runs_its_evaluation_with_its_imports_already_done() -> None:
    worker = _started()
    time.sleep(8)  # its imports take ~1.5 s here; it waits for its job meanwhile
    assert worker.proc.poll() is None, "it waits for its job"
    result = evaluate_candidate(load_problem(SILU), CandidateSpec.file(CANDIDATE), OPTIONS, ahead=worker)
    _passes(result)
    seconds = result.provenance["checks"]["seconds"]
    assert seconds["started_ahead"] > 0.5, seconds  # the sandbox, the interpreter and the imports, not waited for
    assert seconds["startup_imports"] < 0.5, seconds
    phases = sum(v for k, v in seconds.items() if k.startswith("startup_"))
    assert 0 < phases <= seconds["worker_startup"] + 0.05, seconds
    assert worker.closed and not worker.work_dir.exists()


def test_a_worker_started_ahead_for_another_problem_is_killed_and_a_fresh_one_runs() -> None:
    worker = _started(PROBLEMS / "rms_norm")
    result = evaluate_candidate(load_problem(SILU), CandidateSpec.file(CANDIDATE), OPTIONS, ahead=worker)
    _passes(result)
    assert "started_ahead" not in result.provenance["checks"]["seconds"]
    assert worker.closed and worker.proc.poll() is not None and not worker.work_dir.exists()


def test_a_worker_started_ahead_that_died_meanwhile_is_replaced_not_blamed_on_the_candidate() -> None:
    worker = _started()
    worker.proc.kill()
    result = evaluate_candidate(load_problem(SILU), CandidateSpec.file(CANDIDATE), OPTIONS, ahead=worker)
    _passes(result)
    assert "started_ahead" not in result.provenance["checks"]["seconds"]


def test_one_slot_starts_the_next_jobs_worker_while_the_current_job_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import aka_tui.executors.local as local

    started: list[str] = []

    def recorded(problem, candidate, options):  # type: ignore[no-untyped-def]
        started.append(problem.name)
        return start_worker_ahead(problem, candidate, options)

    monkeypatch.setattr(local, "start_worker_ahead", recorded)
    problem = load_problem(SILU)
    jobs = [EvalJob(f"job{i}", problem, CandidateSpec.file(CANDIDATE), OPTIONS) for i in range(3)]
    outcomes = {o.job.key: o.result for o in LocalExecutor("cpu").run(jobs)}
    assert started == ["silu_and_mul", "silu_and_mul"]  # the second and the third job's, each during the one before
    for key in ("job0", "job1", "job2"):
        _passes(outcomes[key])
    assert "started_ahead" not in outcomes["job0"].provenance["checks"]["seconds"]
    assert all(outcomes[k].provenance["checks"]["seconds"]["started_ahead"] > 0.3 for k in ("job1", "job2"))


def test_the_baselines_worker_is_started_while_the_candidates_runs_and_times_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list = []  # type: ignore[type-arg]

    def recorded(job, limits):  # type: ignore[no-untyped-def]
        worker = start_ahead(job, limits)
        taken.append(worker)
        return worker

    monkeypatch.setattr(evaluate, "start_ahead", recorded)
    result = evaluate_candidate(load_problem(SILU), CandidateSpec.file(CANDIDATE), replace(OPTIONS, compare_eager=True))
    _passes(result)
    assert all(s.eager_timing for s in result.shapes), [s.verification for s in result.shapes]
    assert len(taken) == 1 and taken[0].started_ahead
    # it ran the baselines' job and exited by itself (a worker not taken is killed: a negative status)
    assert taken[0].closed and taken[0].proc.proc.returncode == 0
