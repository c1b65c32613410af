"""The loop end to end on the CPU interpreter: baseline, proposals, evaluation, decisions, recording."""

from __future__ import annotations

from pathlib import Path

from aka_tui.agent.loop import AgentEvent, AgentLoop, LoopConfig
from aka_tui.agent.offline import OfflineProposer
from aka_tui.bench.evaluate import EvalOptions
from aka_tui.bench.hardware import get_profile
from aka_tui.bench.problem import load_problem
from aka_tui.knowledge.reference_kernels import kernels_for_op
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.record.session_repo import SessionRepo
from tests.conftest import PROBLEMS


def test_three_iterations_are_evaluated_decided_and_recorded(tmp_path: Path) -> None:
    problem = load_problem(PROBLEMS / "silu_and_mul")
    proposer = OfflineProposer(kernels_for_op(load_kb(default_kb_dir()), "silu_and_mul"), seed=1)
    session = SessionRepo.create(tmp_path / "session", {"problem": problem.name, "proposer": "offline", "seed": 1})
    events: list[AgentEvent] = []
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=1)
    loop = AgentLoop(problem, proposer, get_profile("cpu"), options, LoopConfig(iterations=3, seed=1),
                     tmp_path / "work", session, retrieve=lambda text: (["activation-silu-mul-vectorisation"], "stream it"),
                     on_event=events.append)
    outcome = loop.run()
    kinds = [e.kind for e in events]
    assert kinds[0] == "baseline_measured" and kinds[-1] == "session_finished"
    assert kinds.count("candidate_evaluated") == 3 and "knowledge_retrieved" in kinds
    assert outcome.attempts[0].accepted and outcome.attempts[0].score.real  # the reference kernel is real
    assert all(a.score.correct for a in outcome.attempts)
    assert outcome.stop_reason == "iteration budget spent"
    commits = session.candidates()
    assert [c.iteration for c in commits] == [1, 2, 3]
    recorded = session.iteration_files(2)["proposal"]
    assert recorded["proposer"] == "offline" and "masked_tactics" in recorded["dropout"]
    assert recorded["changed"]  # one tunable changed from the incumbent


def test_close_candidates_are_remeasured_interleaved(tmp_path: Path) -> None:
    problem = load_problem(PROBLEMS / "silu_and_mul")
    proposer = OfflineProposer(kernels_for_op(load_kb(default_kb_dir()), "silu_and_mul"), seed=2)
    events: list[AgentEvent] = []
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)
    # close_rel = 100: every correct candidate counts as "close", so the re-measurement must run.
    config = LoopConfig(iterations=2, seed=2, close_rel=100.0, remeasure_rounds=1)
    outcome = AgentLoop(problem, proposer, get_profile("cpu"), options, config, tmp_path / "work",
                        on_event=events.append).run()
    remeasured = [e for e in events if e.kind == "candidates_remeasured"]
    assert len(remeasured) == 1
    samples = remeasured[0].data["samples"]
    assert len(samples["incumbent"]) == 1 and len(samples["candidate"]) == 1
    assert outcome.attempts[1].accepted == remeasured[0].data["accepted"]
