"""Cheats that need two evaluations of the same file: state kept between them (its compiler cache outlives an
evaluation) must not let the second one replay what the first computed. Case seeds are salted per evaluation, so
the second evaluation's inputs are new; with the fixed seeds the same file turns real, which shows the cheat works
and what the salt closes."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import score_op
from tests.conftest import PROBLEMS

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_outputs_kept_between_evaluations_are_never_found_again(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source = (HERE / "across_evaluations" / "outputs_kept_in_the_compiler_cache.py").read_text()
    candidate = tmp_path / "kept.py"  # a content of its own: a compiler cache no other test run has seen
    candidate.write_text(source + f"\n# {secrets.token_hex(8)}\n")
    problem = load_problem(PROBLEMS / "rms_norm")

    def evaluate(salt: str | None):  # type: ignore[no-untyped-def]
        options = EvalOptions(device="cpu", tier="smoke", cases=1, input_sets=1, cpu_reps=1, fuzz=0,
                              shape_ids=["smoke_t7_h1000_fp16"], seed_salt=salt,
                              limits=WorkerLimits(startup_s=120, per_shape_s=60))
        result = evaluate_candidate(problem, CandidateSpec.file(candidate), options)
        return result, score_op(problem, result, get_profile("cpu"))

    first, op = evaluate("")
    assert op.correct and not op.real, [s.audit for s in first.shapes]  # computed with PyTorch, and kept
    _, op = evaluate("")
    assert op.correct and op.real  # the fixed seeds: the same inputs, replayed through a copy kernel
    monkeypatch.delenv("AKA_FIXED_SEEDS", raising=False)
    salted, op = evaluate(None)
    assert op.correct and not op.real, "an evaluation with salted seeds found the inputs of an earlier one"
    assert salted.shapes[0].seeds != first.shapes[0].seeds
    assert (first.provenance["checks"]["case_seeds"], salted.provenance["checks"]["case_seeds"]) == (
        "fixed", "salted per evaluation")  # the result says which
