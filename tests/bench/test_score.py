"""Scoring math on hand-made results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from aka_tui.bench.measure.acceptance import accept, apply_cli, pending
from aka_tui.bench.measure.results import AuditReport, CandidateResult, ShapeResult, StageError, TimingStats
from aka_tui.bench.problem.model import Problem, RooflineEntry, Shape
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import aggregate, score_op, score_shape
from aka_tui.errors import EvaluationError

H200 = get_profile("h200")
# 4.8e9 bytes at 4.8 TB/s: T_SOL = 1 ms exactly; no FLOPs.
ONE_MS = RooflineEntry(0.0, 2.4e9, 2.4e9, "bf16_tc", "counted")


def _timing(ms: float) -> TimingStats:
    return TimingStats(ms, ms, ms, ms, 10, 3, "cuda_events", 0)


def _result(shape_id: str, ms: float | None, real: bool = True, status: str = "passed",
            eager_ms: float | None = None) -> ShapeResult:
    return ShapeResult(shape_id, status, [1], None if status == "passed" else StageError("x", status, "m"),
                       timing=_timing(ms) if ms else None, audit=AuditReport(real, "test"),
                       eager_timing=_timing(eager_ms) if eager_ms else None)


def _problem(name: str, importance: float, weights: dict[str, float]) -> Problem:
    total = sum(weights.values()) or 1.0
    shapes = {k: Shape(k, {}, {}, "full", w / total, torch.bfloat16) for k, w in weights.items()}
    return Problem(name, Path("."), "norm", torch.bfloat16, importance, shapes, {},
                   roofline={k: ONE_MS for k in weights})


def test_shape_s_is_t_sol_over_t_for_real_kernels_only() -> None:
    s = score_shape(_result("a", 2.0), 1.0, H200, ONE_MS, None)
    assert s.s == pytest.approx(0.5) and s.s_raw == pytest.approx(0.5) and s.t_sol_ms == pytest.approx(1.0)
    fallback = score_shape(_result("a", 2.0, real=False), 1.0, H200, ONE_MS, None)
    assert fallback.s == 0.0 and fallback.s_raw == pytest.approx(0.5)
    failed = score_shape(_result("a", None, status="wrong_output"), 1.0, H200, ONE_MS, None)
    assert failed.s == failed.s_raw == 0.0


def test_launch_aware_floor_and_audit_hold() -> None:
    tiny = RooflineEntry(0.0, 4.8e3, 0.0, "bf16_tc", "counted")  # T_SOL = 1 ns
    s = score_shape(_result("a", 0.004), 1.0, H200, tiny, launch_floor_s=2e-6)
    assert s.s == pytest.approx(1e-9 / 4e-6)
    assert s.s_launch == pytest.approx(2e-6 / 4e-6)
    faster_than_light = score_shape(_result("a", 0.5), 1.0, H200, ONE_MS, None)
    assert faster_than_light.held_for_audit and faster_than_light.verdict == "over_roofline"
    assert faster_than_light.s == 0.0 and faster_than_light.s_launch == 0.0 and faster_than_light.s_raw == pytest.approx(2.0)
    accepted = score_shape(_result("a", 0.5), 1.0, H200, ONE_MS, None, over_roofline_accepted=True)
    assert accepted.s == pytest.approx(2.0) and accepted.verdict == "passed"


def test_over_roofline_holds_s_at_zero_until_a_person_accepts_it() -> None:
    problem = _problem("op", 0.1, {"a": 1.0, "b": 1.0})
    result = CandidateResult("op", "c.py", True, [_result("a", 0.5), _result("b", 2.0)],
                             provenance={"candidate_sha256": "abc"})
    held = score_op(problem, result, H200)
    assert held.s_op == pytest.approx(0.25) and held.holds == ["over_roofline:a"]
    assert aggregate([held]).correct_and_real_rate == 0.0  # a held op is not counted as real yet
    assert pending(result, held.audit_shapes) == [("over_roofline", "a")]
    with pytest.raises(EvaluationError, match="no evaluated shape"):
        accept(result, "over_roofline", "nope", reason="x")
    lifted = accept(result, "over_roofline", "a", by="reviewer", reason="timed by hand: 0.5 ms is real")
    assert lifted.acceptances[0]["by"] == "reviewer" and lifted.acceptances[0]["candidate_sha256"] == "abc"
    scored = score_op(problem, lifted, H200)
    assert scored.s_op == pytest.approx((2.0 + 0.5) / 2) and scored.holds == []
    again = CandidateResult.from_json(json.loads(json.dumps(lifted.to_json())))
    assert score_op(problem, again, H200).s_op == pytest.approx(1.25)  # the acceptance travels with the record
    edited = CandidateResult("op", "c.py", True, lifted.shapes, {"candidate_sha256": "changed"}, None, [], [],
                             lifted.acceptances)
    assert score_op(problem, edited, H200).holds == ["over_roofline:a"]  # a changed file needs a new acceptance


def test_suspicious_candidate_scores_zero_until_accepted_and_tampering_anywhere_zeroes_the_op() -> None:
    problem = _problem("op", 0.1, {"a": 1.0})
    result = CandidateResult("op", "c.py", True, [_result("a", 2.0)], {"candidate_sha256": "abc"},
                             suspicious=["line 3: frame-inspection: sys._getframe"])
    held = score_op(problem, result, H200)
    assert held.s_op == 0.0 and held.s_raw_op == pytest.approx(0.5) and held.holds == ["suspicious"]
    assert held.shapes[0].verdict == "suspicious"
    with pytest.raises(EvaluationError, match="accept-reason"):
        apply_cli(result, ["suspicious"], reason="")
    lifted = apply_cli(result, ["suspicious"], reason="reads frames only to log")
    assert score_op(problem, lifted, H200).s_op == pytest.approx(0.5)
    per_op = apply_cli(result, ["suspicious=other_op"], reason="r", per_op=True)
    assert per_op.acceptances == []  # `aka bench --accept KIND=OP` applies to that op only
    with pytest.raises(EvaluationError, match="a person accepts one of"):
        accept(result, "tampered", reason="r")
    two = _problem("op", 0.1, {"a": 1.0, "b": 1.0})
    caught = CandidateResult("op", "c.py", True, [_result("a", 2.0), _result("b", None, status="tampered")])
    assert score_op(two, caught, H200).s_op == 0.0  # caught tampering on one shape: nothing counts


def test_op_score_is_shape_weighted_and_failures_count_zero() -> None:
    problem = _problem("op", 0.1, {"a": 3.0, "b": 1.0})
    result = CandidateResult("op", "c.py", True, [_result("a", 2.0), _result("b", None, status="timeout")])
    op = score_op(problem, result, H200)
    assert op.s_op == pytest.approx(0.75 * 0.5)
    assert not op.correct and not op.real


def test_aggregate_normalised_raw_weight_pass_rates_and_fast_1() -> None:
    p1, p2, p3 = _problem("p1", 0.30, {"a": 1}), _problem("p2", 0.10, {"a": 1}), _problem("p3", 0.10, {"a": 1})
    ops = [
        score_op(p1, CandidateResult("p1", "c", True, [_result("a", 2.0, eager_ms=3.0)]), H200),  # S .5, faster
        score_op(p2, CandidateResult("p2", "c", True, [_result("a", 1.25, real=False, eager_ms=2.0)]), H200),
        score_op(p3, CandidateResult("p3", "c", False, [_result("a", None, status="compile_error")]), H200),
    ]
    agg = aggregate(ops)
    assert agg.s_agg == pytest.approx((0.30 * 0.5) / 0.5)
    assert agg.s_agg_raw_weight == pytest.approx(0.30 * 0.5)
    assert agg.s_raw_agg == pytest.approx((0.30 * 0.5 + 0.10 * 0.8) / 0.5)
    assert agg.compiled_rate == pytest.approx(2 / 3)
    assert agg.correct_rate == pytest.approx(2 / 3)
    assert agg.correct_and_real_rate == pytest.approx(1 / 3)  # the correctness illusion: 2/3 vs 1/3
    assert agg.fast_1_vs_eager == pytest.approx(1 / 3)  # p2 is faster than eager but a fallback
    assert agg.fast_1_vs_compile is None


def test_speedup_is_weighted_geomean() -> None:
    problem = _problem("op", 0.1, {"a": 1.0, "b": 1.0})
    result = CandidateResult("op", "c", True, [_result("a", 1.0, eager_ms=4.0), _result("b", 1.0, eager_ms=1.0)])
    assert score_op(problem, result, H200).speedup_vs_eager == pytest.approx(2.0)


def test_zero_weight_shapes_do_not_count_in_the_speedup() -> None:
    # Trace-derived weights give shapes a workload never called weight 0 (they are still checked).
    problem = _problem("op", 0.1, {"a": 1.0, "b": 0.0})
    result = CandidateResult("op", "c", True, [_result("a", 1.0, eager_ms=4.0), _result("b", 1.0, eager_ms=1000.0)])
    assert score_op(problem, result, H200).speedup_vs_eager == pytest.approx(4.0)
    unweighted = _problem("op", 0.1, {"a": 0.0, "b": 0.0})
    assert score_op(unweighted, result, H200).speedup_vs_eager == pytest.approx(math.sqrt(4.0 * 1000.0))
