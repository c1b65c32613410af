"""The evaluator end to end on the CPU interpreter: verdicts for correct, wrong, fallback and broken candidates."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem, load_suite
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import score_op
from aka_tui.executors.suite import run_bench
from tests.conftest import CANDIDATES, DATA, PROBLEMS
from tests.prefetch import Prefetch, prefetch, selected

CPU = get_profile("cpu")
FAST = EvalOptions(device="cpu", tier="smoke", cases=2, cpu_reps=1, input_sets=1,
                   limits=WorkerLimits(startup_s=120, per_shape_s=120))
CORRECT = sorted(PROBLEMS.glob("*/solutions/correct/*.py"))
WRONG = sorted(PROBLEMS.glob("*/solutions/wrong/*.py"))


def _eval(problem_name: str, candidate: Path, options: EvalOptions = FAST):  # type: ignore[no-untyped-def]
    problem = load_problem(PROBLEMS / problem_name)
    result = evaluate_candidate(problem, CandidateSpec.file(candidate), options)
    return result, score_op(problem, result, CPU)


def _eager_baseline():  # type: ignore[no-untyped-def]
    problem = load_problem(PROBLEMS / "silu_and_mul")
    result = evaluate_candidate(problem, CandidateSpec("eager"), FAST)
    return result, score_op(problem, result, CPU)


def _atrex_with_a_triton_candidate():  # type: ignore[no-untyped-def]
    problem = load_problem(DATA / "atrex_suite" / "swish_scale")
    options = EvalOptions(device="cpu", tier="full", cases=2, cpu_reps=1, input_sets=1)
    result = evaluate_candidate(problem, CandidateSpec.file(CANDIDATES / "swish_scale_triton.py"), options)
    return result, score_op(problem, result, CPU)


def _bench_with_broken_candidates(candidates: Path):  # type: ignore[no-untyped-def]
    candidates.mkdir()
    for op, source in (("rms_norm", "segfault.py"), ("fused_add_rms_norm", "hang.py"),
                       ("layer_norm", "raises.py")):
        (candidates / f"{op}.py").write_text((CANDIDATES / source).read_text())
    silu = next(p for p in CORRECT if p.parents[2].name == "silu_and_mul")
    (candidates / "silu_and_mul.py").write_text(silu.read_text())
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0,
                          limits=WorkerLimits(startup_s=120, per_shape_s=8, max_restarts=4))
    ops = ["rms_norm", "fused_add_rms_norm", "layer_norm", "silu_and_mul", "rope"]
    return run_bench(load_suite(PROBLEMS), options, candidates_dir=candidates, ops=ops)


COMPILE_ERRORS = (("syntax_error.py", "SyntaxError"), ("no_model.py", "does not define class Model"))


@pytest.fixture(scope="module")
def evaluations(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prefetch]:
    """Every evaluation the selected tests assert on, run a few at a time (tests/prefetch.py); the bench
    with a hanging candidate first, as it takes longest (two shapes wait out their timeout)."""
    def single(problem_name: str, candidate: Path):  # type: ignore[no-untyped-def]
        return (problem_name, candidate), lambda: _eval(problem_name, candidate)

    jobs = {
        "test_segfault_hang_and_raise_each_get_a_verdict_while_the_bench_continues": [
            ("bench", lambda: _bench_with_broken_candidates(tmp_path_factory.mktemp("bench") / "candidates"))],
        "test_torch_fallback_is_marked_with_s_zero_and_s_raw_positive": [
            single("rms_norm", CANDIDATES / "rms_norm_torch_fallback.py")],
        "test_eager_baseline_is_a_fallback": [("eager", _eager_baseline)],
        # No fuzzed shapes: they would crash too, each in a fresh worker (the restart after a crash is what the
        # bench below shows, its segfaulting candidate crashing on every shape).
        "test_crash_on_one_shape_leaves_the_other_shape_evaluated": [
            (("rms_norm", CANDIDATES / "rms_norm_crash_on_large.py"),
             lambda: _eval("rms_norm", CANDIDATES / "rms_norm_crash_on_large.py", replace(FAST, fuzz=0)))],
        "test_compile_errors_are_verdicts": [single("rms_norm", CANDIDATES / name) for name, _ in COMPILE_ERRORS],
        "test_atrex_fixture_evaluates_with_a_triton_candidate": [("atrex", _atrex_with_a_triton_candidate)],
    }
    wanted = []
    for test, params in selected(request):
        if "candidate" in params:  # the correct and wrong solutions
            wanted.append(single(params["candidate"].parents[2].name, params["candidate"]))
        wanted.extend(jobs.get(test, []))
    wanted.sort(key=lambda job: job[0] != "bench")
    with prefetch(wanted) as ahead:
        yield ahead


def test_at_least_three_problems_have_correct_triton_candidates() -> None:
    assert len({p.parents[2].name for p in CORRECT}) >= 3


@pytest.mark.parametrize("candidate", CORRECT, ids=lambda p: f"{p.parents[2].name}/{p.stem}")
def test_correct_candidates_pass_as_real_kernels(candidate: Path, evaluations: Prefetch) -> None:
    result, op = evaluations.result((candidate.parents[2].name, candidate))
    assert result.compiled
    assert all(s.passed for s in result.shapes), [(s.shape_id, s.error) for s in result.shapes]
    assert op.correct and op.real, [s.audit for s in result.shapes]
    assert op.s_op > 0 and all(s.seeds for s in result.shapes)
    assert any(s.fuzz for s in result.shapes), "fuzzed shapes are part of every candidate evaluation"
    assert result.provenance["candidate_sha256"] and result.provenance["problem_hash"]
    # Where the time went: the worker's start, the workers in all, each shape's stages (fuzzed ones too).
    seconds = result.provenance["checks"]["seconds"]
    assert 0 < seconds["worker_startup"] < seconds["workers"]
    # ... and the worker's own split of its start, which fits inside it (the parent's clock runs from before the
    # sandbox's spawn until the `compiled` message arrives)
    phases = {k[len("startup_"):]: v for k, v in seconds.items() if k.startswith("startup_")}
    assert set(phases) == {"process", "imports", "problem", "device", "harness", "candidate"}, seconds
    assert phases["imports"] > 0 and 0 < sum(phases.values()) <= seconds["worker_startup"] + 0.05, seconds
    assert all("correctness" in s.verification["seconds"] for s in result.shapes)


@pytest.mark.parametrize("candidate", WRONG, ids=lambda p: f"{p.parents[2].name}/{p.stem}")
def test_wrong_candidates_fail_with_the_reason(candidate: Path, evaluations: Prefetch) -> None:
    result, op = evaluations.result((candidate.parents[2].name, candidate))
    assert result.compiled
    listed = [s for s in result.shapes if not s.fuzz]
    assert listed and all(s.status == "wrong_output" for s in listed)
    for shape in listed:
        assert shape.error is not None and "outside atol" in shape.error.message
        assert f"--replay-seed {shape.seeds[-1]}" in shape.error.message  # one command replays it
    assert op.s_op == 0.0 and not op.correct


def test_torch_fallback_is_marked_with_s_zero_and_s_raw_positive(evaluations: Prefetch) -> None:
    result, op = evaluations.result(("rms_norm", CANDIDATES / "rms_norm_torch_fallback.py"))
    assert all(s.passed for s in result.shapes)
    listed = [s for s in result.shapes if not s.fuzz]
    assert all(s.audit is not None and not s.audit.real for s in listed)
    assert any("torch-compute" in f and "rsqrt" in f for f in result.static_findings)
    assert "aten." in result.shapes[0].audit.reason and "no Triton kernel" in result.shapes[0].audit.reason
    assert op.s_op == 0.0 and op.s_raw_op > 0.0


def test_eager_baseline_is_a_fallback(evaluations: Prefetch) -> None:
    result, op = evaluations.result("eager")
    assert op.correct and not op.real and op.s_op == 0.0 and op.s_raw_op > 0


@pytest.mark.slow
def test_crash_on_one_shape_leaves_the_other_shape_evaluated(evaluations: Prefetch) -> None:
    result, _ = evaluations.result(("rms_norm", CANDIDATES / "rms_norm_crash_on_large.py"))
    by_id = {s.shape_id: s for s in result.shapes}
    assert by_id["smoke_t7_h1000_fp16"].passed
    crashed = by_id["smoke_t12_h2880_fp32"]
    assert crashed.status == "crashed" and "SIGSEGV" in crashed.error.message


def test_compile_errors_are_verdicts(evaluations: Prefetch) -> None:
    for name, fragment in COMPILE_ERRORS:
        result, op = evaluations.result(("rms_norm", CANDIDATES / name))
        assert not result.compiled and fragment in result.compile_error.message
        assert all(s.status == "compile_error" for s in result.shapes) and op.s_op == 0.0


def test_segfault_hang_and_raise_each_get_a_verdict_while_the_bench_continues(evaluations: Prefetch) -> None:
    report = evaluations.result("bench")
    statuses = {r.problem: {s.status for s in r.shapes} for r in report.results}
    assert statuses["rms_norm"] == {"crashed"}
    assert statuses["fused_add_rms_norm"] == {"timeout"}
    assert statuses["layer_norm"] == {"runtime_error"}
    assert statuses["silu_and_mul"] == {"passed"}
    assert statuses["rope"] == {"no_candidate"}
    raised = report.results[2].shapes[0].error
    assert raised is not None and "invalid grid" in raised.message and "Traceback" in raised.traceback_text
    assert report.aggregate.correct_rate == pytest.approx(1 / 5)


def test_atrex_fixture_evaluates_with_a_triton_candidate(evaluations: Prefetch) -> None:
    result, op = evaluations.result("atrex")
    assert op.correct and op.real and op.s_op > 0
    assert result.shapes[0].roofline["source"] == "atrex"
