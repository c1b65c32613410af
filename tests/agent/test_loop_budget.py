"""The loop's wall-time budget with a fake clock and fake evaluations (no worker runs): an iteration that is
predicted not to fit is not started, the re-measurement runs only the rounds that fit, and a win that no
round fits for is not accepted."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import aka_tui.agent.loop as loop_module
import aka_tui.agent.measure as measure_module
from aka_tui.agent.budget import WallBudget
from aka_tui.agent.loop import AgentEvent, AgentLoop, LoopConfig, LoopOutcome
from aka_tui.agent.offline import Proposal
from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import OpScore
from aka_tui.cli import main
from aka_tui.record.session_repo import SessionRepo, read_meta
from tests.conftest import PROBLEMS

# Full evaluations: every case and fuzzing; the loop's quick ones (screening, re-measurement) have one case
# and no fuzzing, which is how the fake evaluator tells them apart.
OPTIONS = EvalOptions(device="cpu", tier="smoke", cases=2, fuzz=1)


class FakeClock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeResult:
    """What the loop reads of an evaluator result: shapes (for the first error) and JSON."""

    s_op: float
    shapes: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"fake": True, "s_op": self.s_op}


@dataclass
class FakeEvaluator:
    """Advances the clock by each evaluation's duration; S_op is written in the candidate's source."""

    clock: FakeClock
    baseline_s: float = 5.0
    full_s: list[float] = field(default_factory=lambda: [10.0])  # one per full evaluation; the last repeats
    quick_s: float = 4.0
    calls: list[str] = field(default_factory=list)

    def __call__(self, problem: Problem, spec: CandidateSpec, options: EvalOptions, **_kw: Any) -> FakeResult:
        if spec.kind == "eager":
            kind, seconds, s_op = "baseline", self.baseline_s, 0.0
        else:
            assert spec.path is not None
            s_op = float(re.search(r"s_op=([0-9.]+)", spec.path.read_text()).group(1))  # type: ignore[union-attr]
            if options.fuzz == 0 and options.cases == 1:
                kind, seconds = "quick", self.quick_s
            else:
                kind = "full"
                full_count = self.calls.count("full")
                seconds = self.full_s[min(full_count, len(self.full_s) - 1)]
        self.calls.append(kind)
        self.clock.now += seconds
        return FakeResult(s_op)


def _fake_score(problem: Problem, result: FakeResult, profile: Any) -> OpScore:
    return OpScore(problem.name, 1.0, True, True, True, result.s_op, result.s_op, result.s_op)


class ScriptedProposer:
    """Proposes `# s_op=…` sources in order, taking `propose_s` of the fake clock each time."""

    name = "scripted"

    def __init__(self, clock: FakeClock, s_ops: list[float], propose_s: float = 0.0) -> None:
        self.clock, self.propose_s = clock, propose_s
        self.proposals = [Proposal(f"# s_op={s}\n", f"scripted-{i}", {"i": i}, {"i": (i - 1, i)}, f"scripted {i}")
                          for i, s in enumerate(s_ops)]

    def tactics(self) -> list[str]:
        return []

    def first(self) -> Proposal:
        self.clock.now += self.propose_s
        return self.proposals.pop(0)

    def propose(self, point: Any, memory: Any, bottleneck: Any, tactics: Any) -> Proposal:
        self.clock.now += self.propose_s
        return self.proposals.pop(0)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: LoopConfig, s_ops: list[float],
         full_s: list[float], propose_s: float = 0.0,
         ) -> tuple[LoopOutcome, list[AgentEvent], SessionRepo, FakeEvaluator]:
    clock = FakeClock()
    evaluator = FakeEvaluator(clock, full_s=full_s)
    monkeypatch.setattr(measure_module, "evaluate_candidate", evaluator)
    monkeypatch.setattr(measure_module, "score_op", _fake_score)
    problem = load_problem(PROBLEMS / "silu_and_mul")
    session = SessionRepo.create(tmp_path / "session", {"problem": problem.name, "proposer": "scripted"})
    events: list[AgentEvent] = []
    loop = AgentLoop(problem, ScriptedProposer(clock, s_ops, propose_s), get_profile("cpu"), OPTIONS, config,
                     tmp_path / "work", session, on_event=events.append)
    loop.clock = clock
    return loop.run(), events, session, evaluator


def test_an_iteration_predicted_not_to_fit_is_not_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # t=5 after the baseline; iteration 1: 3 s proposing + 10 s full evaluation, accepted, t=18 (42 s left).
    # Iteration 2 would be 3 s + screening (no quick one timed yet: 10 s) + 10 s + 3 rounds × 2 × 10 s = 83 s.
    config = LoopConfig(iterations=3, wall_time_s=60.0, remeasure_rounds=3)
    outcome, events, session, evaluator = _run(tmp_path, monkeypatch, config, [0.5, 0.6, 0.7], [10.0],
                                               propose_s=3.0)
    assert [a.iteration for a in outcome.attempts] == [1] and outcome.attempts[0].accepted
    assert outcome.stop_reason == "wall-time budget: next iteration predicted 83.0 s, 42.0 s left"
    assert evaluator.calls == ["baseline", "full"]
    assert [e.data for e in events if e.kind == "iteration_started"] == [{"iteration": 1, "predicted_s": 5.0}]
    finished = [e.data for e in events if e.kind == "session_finished"]
    assert finished == [{"reason": outcome.stop_reason, "best_s": 0.5, "best_iteration": 1}]
    assert [c.iteration for c in session.candidates()] == [1]


def test_an_iteration_that_fits_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As above with 101 s: 83 s predicted, 83 s left → iteration 2 starts and runs in full.
    config = LoopConfig(iterations=2, wall_time_s=101.0, remeasure_rounds=3)
    outcome, _events, _session, evaluator = _run(tmp_path, monkeypatch, config, [0.5, 0.6], [10.0], propose_s=3.0)
    assert [a.iteration for a in outcome.attempts] == [1, 2] and outcome.stop_reason == "iteration budget spent"
    # iteration 2: screening, full evaluation and three interleaved rounds
    assert evaluator.calls == ["baseline", "full", "quick", "full"] + ["quick"] * 6


def test_remeasure_runs_the_rounds_that_fit_and_records_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # t=15 after iteration 1 (85 s left of 100: iteration 2's 80 s fit). Iteration 2: screening 4 s, then a full
    # evaluation that takes 60 s instead of 10: t=79, 21 s left, a round (two quick evaluations) 8 s → 2 rounds.
    config = LoopConfig(iterations=2, wall_time_s=100.0, remeasure_rounds=3)
    outcome, events, session, evaluator = _run(tmp_path, monkeypatch, config, [0.5, 0.6], [10.0, 60.0])
    assert evaluator.calls == ["baseline", "full", "quick", "full"] + ["quick"] * 4
    remeasured = [e.data for e in events if e.kind == "candidates_remeasured"]
    assert len(remeasured) == 1 and remeasured[0]["rounds"] == 2 and remeasured[0]["rounds_planned"] == 3
    assert remeasured[0]["samples"] == {"incumbent": [0.5, 0.5], "candidate": [0.6, 0.6]}
    assert remeasured[0]["reason"] == "budget: a round predicted 8.0 s, 5.0 s left"
    assert outcome.attempts[1].accepted  # verified by the rounds that ran
    recorded = session.iteration_files(2)["proposal"]["remeasure"]
    assert recorded == {"rounds": 2, "rounds_planned": 3, "samples": {"incumbent": [0.5, 0.5], "candidate": [0.6, 0.6]},
                        "accepted": True, "reason": remeasured[0]["reason"]}
    assert "remeasure" not in session.iteration_files(1)["proposal"]  # the first kernel is not re-measured
    assert main(["replay", str(session.path)]) == 0
    assert ("re-measured: 2 of 3 rounds, S_op incumbent 0.5000, 0.5000; candidate 0.6000, 0.6000 (budget: a round "
            "predicted 8.0 s, 5.0 s left)" in capsys.readouterr().out)


def test_a_win_with_no_budget_for_one_round_is_not_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As above, with a 75 s full evaluation in iteration 2: t=94, 6 s left, a round is 8 s.
    config = LoopConfig(iterations=2, wall_time_s=100.0, remeasure_rounds=3)
    outcome, events, session, evaluator = _run(tmp_path, monkeypatch, config, [0.5, 0.6], [10.0, 75.0])
    assert evaluator.calls == ["baseline", "full", "quick", "full"]
    assert not outcome.attempts[1].accepted and outcome.incumbent is outcome.attempts[0]
    reason = "not re-measured: budget: a round predicted 8.0 s, 6.0 s left"
    assert [e.data for e in events if e.kind == "remeasure_skipped"] == [
        {"iteration": 2, "rounds_planned": 3, "reason": reason}]
    assert not [e for e in events if e.kind == "candidates_remeasured"]
    recorded = session.iteration_files(2)["proposal"]["remeasure"]
    assert recorded == {"rounds": 0, "rounds_planned": 3, "samples": {"incumbent": [], "candidate": []},
                        "accepted": False, "reason": reason}
    message = next(c.message for c in session.candidates() if c.iteration == 2)
    assert message.startswith("iter 2: rejected (not re-measured: budget) S_op=0.6000")


def test_without_a_wall_time_every_round_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = LoopConfig(iterations=2, remeasure_rounds=3)
    outcome, _events, session, evaluator = _run(tmp_path, monkeypatch, config, [0.5, 0.6], [10.0, 500.0])
    assert evaluator.calls == ["baseline", "full", "quick", "full"] + ["quick"] * 6
    assert outcome.stop_reason == "iteration budget spent" and outcome.attempts[1].accepted
    assert session.iteration_files(2)["proposal"]["remeasure"]["rounds"] == 3


def test_the_prediction_takes_the_longest_of_each_kind() -> None:
    clock = FakeClock()
    budget = WallBudget(300.0, clock)
    assert budget.predict_iteration_s(True, True, False, 3) is None  # nothing timed yet: no prediction
    for kind, seconds in (("baseline", 5.0), ("full", 12.0), ("full", 9.0), ("quick", 3.0), ("quick", 4.0)):
        with budget.timed(kind):
            clock.now += seconds
    budget.iteration_started()
    clock.now += 2.0  # the proposer
    with budget.timed("full"):
        clock.now += 7.0
    budget.iteration_finished()
    assert budget.overheads_s == [2.0]
    assert budget.predict_iteration_s(False, True, False, 3) == 2.0 + 12.0  # no incumbent: one full evaluation
    assert budget.predict_iteration_s(True, True, False, 3) == 2.0 + 4.0 + 12.0 + 6 * 4.0
    assert budget.predict_iteration_s(True, False, False, 0) == 2.0 + 12.0
    assert budget.predict_iteration_s(True, True, True, 1) == 2.0 + 4.0 + 12.0 + 2 * 4.0  # no batch yet: quick
    assert budget.left_s() == 300.0 - 42.0
    assert WallBudget(None, clock).left_s() == float("inf")


class _CapturedLoop:
    """Stands in for AgentLoop in `aka optimize`: records its config, runs nothing."""

    configs: list[LoopConfig] = []

    def __init__(self, problem: Any, proposer: Any, profile: Any, options: Any, config: LoopConfig,
                 *args: Any, **kwargs: Any) -> None:
        self.configs.append(config)

    def run(self, **_kw: Any) -> LoopOutcome:
        return LoopOutcome(stop_reason="captured")


def test_the_remeasure_rounds_flag_reaches_the_loop_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(loop_module, "AgentLoop", _CapturedLoop)
    monkeypatch.setattr(_CapturedLoop, "configs", [])
    argv = ["optimize", "silu_and_mul", "--device", "cpu", "--tier", "smoke", "--no-kb", "--no-propose",
            "--iterations", "1"]
    for run, extra in enumerate((["--remeasure-rounds", "1", "--wall-time", "30"], [], ["--remeasure-rounds", "0"])):
        assert main([*argv, "--sessions", str(tmp_path / str(run)), *extra]) == 0
    assert [(c.remeasure_rounds, c.wall_time_s) for c in _CapturedLoop.configs] == [(1, 30.0), (3, None), (0, None)]
    recorded = [read_meta(next((tmp_path / str(run)).iterdir()))["remeasure_rounds"] for run in range(3)]
    assert recorded == [1, 3, 0]
    with pytest.raises(SystemExit):
        main([*argv, "--sessions", str(tmp_path / "3"), "--remeasure-rounds", "-1"])
    assert "--remeasure-rounds" in capsys.readouterr().err


def test_resume_keeps_the_recorded_rounds_unless_the_flag_is_given(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "AgentLoop", _CapturedLoop)
    monkeypatch.setattr(_CapturedLoop, "configs", [])
    sessions = tmp_path / "sessions"
    assert main(["optimize", "silu_and_mul", "--device", "cpu", "--tier", "smoke", "--no-kb", "--no-propose",
                 "--iterations", "1", "--sessions", str(sessions), "--remeasure-rounds", "2"]) == 0
    (path,) = list(sessions.iterdir())
    resume = ["optimize", "--resume", str(path), "--no-propose", "--no-kb", "--force"]
    assert main(resume) == 0
    assert main([*resume, "--remeasure-rounds", "0"]) == 0
    assert [c.remeasure_rounds for c in _CapturedLoop.configs] == [2, 2, 0]
