"""The loop end to end on the CPU interpreter: baseline, proposals, evaluation, decisions, recording."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aka_tui.agent.loop import AgentEvent, AgentLoop, LoopConfig
from aka_tui.agent.offline import OfflineProposer
from aka_tui.bench.evaluator.evaluate import EvalOptions
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.knowledge.reference_kernels import kernels_for_op
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.record.session_repo import SessionRepo
from tests.conftest import PROBLEMS
from tests.prefetch import Prefetch, prefetch, selected


def _silu_loop(tmp_path: Path, seed: int, config: LoopConfig, fuzz: int, recorded: bool = True,
               **loop_kwargs: Any):  # type: ignore[no-untyped-def]
    """(outcome, events, session) of one offline-proposer run on silu_and_mul (smoke tier, CPU)."""
    problem = load_problem(PROBLEMS / "silu_and_mul")
    proposer = OfflineProposer(kernels_for_op(load_kb(default_kb_dir()), "silu_and_mul"), seed=seed)
    session = (SessionRepo.create(tmp_path / "session", {"problem": problem.name, "proposer": "offline", "seed": seed})
               if recorded else None)
    events: list[AgentEvent] = []
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=fuzz)
    loop = AgentLoop(problem, proposer, get_profile("cpu"), options, config, tmp_path / "work", session,
                     on_event=events.append, **loop_kwargs)
    return loop.run(), events, session


def _three_iterations(tmp_path: Path):  # type: ignore[no-untyped-def]
    # No interleaved re-measurement of wins and close calls (two more evaluations per round, each time):
    # test_close_candidates_are_remeasured_interleaved forces and checks it.
    return _silu_loop(tmp_path, 1, LoopConfig(iterations=3, seed=1, remeasure_rounds=0), fuzz=1,
                      retrieve=lambda text: (["activation-silu-mul-vectorisation"], "stream it"))


def _close_candidates(tmp_path: Path):  # type: ignore[no-untyped-def]
    # close_rel = 100: every correct candidate counts as "close", so the re-measurement must run. Neither the
    # baseline nor the screening is asserted on here (the first test has both).
    config = LoopConfig(iterations=2, seed=2, close_rel=100.0, remeasure_rounds=1, baseline=False, screen=False)
    outcome, events, _ = _silu_loop(tmp_path, 2, config, fuzz=0, recorded=False)
    return outcome, events


def _best_of_two(tmp_path: Path):  # type: ignore[no-untyped-def]
    from aka_tui.executors.local import LocalExecutor

    # remeasure_rounds=0: as in the first test, wins and close calls are not re-measured here; nor is the
    # baseline measured.
    return _silu_loop(tmp_path, 3, LoopConfig(iterations=2, seed=3, best_of=2, remeasure_rounds=0, baseline=False),
                      fuzz=0, executor=LocalExecutor("cpu", cpu_workers=2))


@pytest.fixture(scope="module")
def loops(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prefetch]:
    """The selected loop runs that patch nothing, side by side (tests/prefetch.py): each is a series of
    evaluation workers the test only waits on."""
    runs = {"test_three_iterations_are_evaluated_decided_and_recorded": _three_iterations,
            "test_close_candidates_are_remeasured_interleaved": _close_candidates,
            "test_best_of_k_screens_k_proposals_in_parallel_and_records_each": _best_of_two}
    wanted = [test for test, _ in selected(request) if test in runs]
    with prefetch((test, lambda test=test: runs[test](tmp_path_factory.mktemp("loop"))) for test in wanted) as ahead:
        yield ahead


class _ScriptedProposer:
    """Proposes the given sources in order (the loop's proposer protocol, no model)."""

    name = "scripted"

    def __init__(self, sources: list[str]) -> None:
        from aka_tui.agent.offline import Proposal

        self.proposals = [Proposal(src, f"scripted-{i}", {"i": i}, {"i": (i - 1, i)}, f"scripted {i}")
                          for i, src in enumerate(sources)]

    def tactics(self) -> list[str]:
        return []

    def first(self):  # type: ignore[no-untyped-def]
        return self.proposals.pop(0)

    def propose(self, point, memory, bottleneck, tactics):  # type: ignore[no-untyped-def]
        return self.proposals.pop(0)


@pytest.mark.slow
def test_a_clearly_slower_candidate_is_screened_out_without_a_full_evaluation(  # type: ignore[no-untyped-def]
        tmp_path: Path, monkeypatch, loops: Prefetch) -> None:
    """Runs while the other tests' loops (`loops`, started here) run in the pool; only the evaluations of this
    test's loop, on this thread, are counted."""
    import aka_tui.agent.measure as measure_module

    honest = (PROBLEMS / "silu_and_mul/solutions/correct/triton_silu_and_mul.py").read_text()
    # The same real kernel, launched 10 times per call: correct, real, and far slower (screened out below 0.9 of
    # the incumbent's S_op).
    slow = honest.replace("class Model(", "class _Once(", 1) + (
        "\n\nclass Model(_Once):\n    def forward(self, *args, **kwargs):\n"
        "        for _ in range(9):\n            super().forward(*args, **kwargs)\n"
        "        return super().forward(*args, **kwargs)\n")
    calls: list[tuple[list[str] | None, int | None]] = []
    real_evaluate = measure_module.evaluate_candidate
    this_thread = threading.get_ident()

    def counting(problem, spec, options, **kw):  # type: ignore[no-untyped-def]
        if threading.get_ident() == this_thread:
            calls.append((options.shape_ids, options.fuzz))
        return real_evaluate(problem, spec, options, **kw)

    monkeypatch.setattr(measure_module, "evaluate_candidate", counting)
    problem = load_problem(PROBLEMS / "silu_and_mul")
    events: list[AgentEvent] = []
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=3, input_sets=1, fuzz=1)
    outcome = AgentLoop(problem, _ScriptedProposer([honest, slow]), get_profile("cpu"), options,
                        LoopConfig(iterations=2, seed=0), tmp_path / "work", on_event=events.append).run()
    screened = [e.data for e in events if e.kind == "candidate_screened"]
    assert len(screened) == 1 and not screened[0]["promising"] and screened[0]["correct"] and screened[0]["real"]
    assert outcome.attempts[0].accepted and not outcome.attempts[1].accepted
    # baseline, full evaluation of iteration 1, then only the screening of iteration 2 (weighted shapes, no fuzz)
    assert len(calls) == 3
    assert calls[2][0] == [s.shape_id for s in problem.shapes_for("smoke") if s.weight > 0] and calls[2][1] == 0


@pytest.mark.slow
def test_three_iterations_are_evaluated_decided_and_recorded(loops: Prefetch) -> None:
    outcome, events, session = loops.result("test_three_iterations_are_evaluated_decided_and_recorded")
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


def test_close_candidates_are_remeasured_interleaved(loops: Prefetch) -> None:
    outcome, events = loops.result("test_close_candidates_are_remeasured_interleaved")
    remeasured = [e for e in events if e.kind == "candidates_remeasured"]
    assert len(remeasured) == 1
    samples = remeasured[0].data["samples"]
    assert len(samples["incumbent"]) == 1 and len(samples["candidate"]) == 1
    assert outcome.attempts[1].accepted == remeasured[0].data["accepted"]


def test_best_of_k_screens_k_proposals_in_parallel_and_records_each(loops: Prefetch) -> None:
    outcome, events, session = loops.result("test_best_of_k_screens_k_proposals_in_parallel_and_records_each")
    parallel = [e.data for e in events if e.kind == "candidates_screened_in_parallel"]
    assert len(parallel) == 1 and parallel[0]["k"] == 2 and len(parallel[0]["s_ops"]) == 2
    # iteration 1 (first kernel) + a best-of-2 step = 3 candidates, each its own commit
    assert [a.iteration for a in outcome.attempts] == [1, 2, 3]
    assert [c.iteration for c in session.candidates()] == [1, 2, 3]
    loser = session.iteration_files(2)["proposal"]
    assert loser["best_of"] == {"k": 2, "rank": 1 - parallel[0]["best_rank"], "chosen": False}
    assert outcome.attempts[1].proposal.source != outcome.attempts[2].proposal.source


def test_a_candidate_that_does_not_compile_for_the_gpu_is_not_accepted(tmp_path: Path) -> None:
    """With compile_for, a candidate the CPU interpreter runs correctly but Triton's compiler rejects (two return
    types from one helper) is rejected with the compiler's reason; one that compiles is accepted."""
    from tests.conftest import REPO

    interpreter_only = (REPO / "tests/data/candidates/rms_norm_interpreter_only.py").read_text()
    kb_kernel = (REPO / "kb/family/norm/rms_norm.py").read_text()
    problem = load_problem(PROBLEMS / "rms_norm")
    events: list[AgentEvent] = []
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)
    config = LoopConfig(iterations=2, seed=0, remeasure_rounds=0, screen=False, baseline=False, compile_for=90)
    outcome = AgentLoop(problem, _ScriptedProposer([interpreter_only, kb_kernel]), get_profile("cpu"), options,
                        config, tmp_path / "work", on_event=events.append).run()
    first, second = outcome.attempts
    assert first.score.correct and first.score.real and not first.accepted
    assert first.error.startswith("does not compile for sm_90: CompilationError")
    assert second.accepted and not second.error
    evaluated = [e.data for e in events if e.kind == "candidate_evaluated"]
    assert evaluated[0]["why"].startswith("does not compile for sm_90") and evaluated[1]["accepted"]


def test_an_adopted_edit_that_declares_its_tunables_is_what_the_offline_proposer_tunes(tmp_path: Path) -> None:
    """A person's edit, once adopted, is the kernel the offline proposer tunes (its next candidates carry the edit,
    stepped from the edit's TUNABLES); an edit without TUNABLES / SEARCH_SPACE is adopted too, but the log says the
    next candidates cannot carry it."""
    problem = load_problem(PROBLEMS / "silu_and_mul")
    kernel = kernels_for_op(load_kb(default_kb_dir()), "silu_and_mul")[0]
    proposer = OfflineProposer([kernel], seed=4)
    events: list[AgentEvent] = []
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)
    config = LoopConfig(iterations=1, seed=4, remeasure_rounds=0, baseline=False, screen=False)
    loop = AgentLoop(problem, proposer, get_profile("cpu"), options, config, tmp_path / "work", None,
                     on_event=events.append)
    edited = "# tuned by hand\n" + kernel.source
    loop.inject(edited, ("Ada Kernel", "ada@example.invalid"), "by hand")
    outcome = loop.run()
    by_hand, agent = outcome.attempts
    assert by_hand.accepted and by_hand.proposal.point == kernel.tunables
    assert agent.proposal.source.startswith("# tuned by hand") and agent.proposal.path == "person Ada Kernel"
    evaluated = [e.data for e in events if e.kind == "candidate_evaluated"]
    assert evaluated[0]["tuned_next"] is True
    assert proposer.adopt("import torch\n\nclass Model(torch.nn.Module):\n    pass\n", "Ada Kernel") is None
    assert proposer.kernel.source == edited  # an edit without TUNABLES leaves the tuned kernel as it was


def test_a_resumed_session_goes_on_tuning_a_persons_adopted_edit() -> None:
    """Resuming a session whose incumbent is a person's edit gives the offline proposer that edit (a
    candidate of the proposer's own, or no incumbent, leaves it as it was)."""
    from aka_tui.agent.attempt import Attempt
    from aka_tui.agent.offline import Proposal
    from aka_tui.agent.resume import adopt_persons_incumbent

    kernel = kernels_for_op(load_kb(default_kb_dir()), "silu_and_mul")[0]
    proposer = OfflineProposer([kernel], seed=5)
    agents = Attempt(1, Proposal(kernel.source, kernel.entry_id, {}, {}, "", path="kb x"), None, True)  # type: ignore[arg-type]
    adopt_persons_incumbent(proposer, agents)
    adopt_persons_incumbent(proposer, None)
    assert proposer.kernel is kernel
    edited = "# by hand\n" + kernel.source
    persons = Attempt(2, Proposal(edited, "person", {}, {}, "", path="person Ada Kernel"), None, True)  # type: ignore[arg-type]
    adopt_persons_incumbent(proposer, persons)
    assert proposer.kernel.source == edited and proposer.path == "person Ada Kernel"
