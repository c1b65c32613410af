"""The measure–revise loop: baseline → (retrieve → propose → evaluate → decide → record) × N.

A library API with an event stream (`on_event`, kinds in aka_tui/agent/events.py) that the CLI and the app show.
It accepts only a correct, real candidate whose S_op beats the incumbent by more than the noise margin, confirmed
by an interleaved re-measurement whenever it looks better or close; with `compile_for`, it must also compile
for that GPU. The evaluations (baseline, screening, full, re-measurement) are in aka_tui/agent/measure.py.

Wall time (`wall_time_s`, aka_tui/agent/budget.py): an iteration starts only when its predicted worst-path
duration fits in what is left; a re-measurement runs only the rounds that fit; a win no round fits is rejected.

Cost control (each evaluation is a worker process; on a GPU most of a full evaluation is start-up, fuzzed shapes
and extra correctness cases): once there is an incumbent, a proposal is first *screened* on the weighted shapes,
one case, no fuzzing. Only a candidate that is correct, real and not clearly slower (within `close_rel` of the
incumbent or better) gets the full hardened evaluation; a screened-out one is recorded, never accepted.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from aka_tui.agent.attempt import Attempt, LoopOutcome, bottleneck_of, first_error, measurements_text, one_line
from aka_tui.agent.budget import WallBudget
from aka_tui.agent.dropout import MemoryRecord, apply_dropout, dropout_rng
from aka_tui.agent.events import AgentEvent, AgentEventKind
from aka_tui.agent.measure import Measurer
from aka_tui.agent.offline import Proposal
from aka_tui.agent.proposers import Proposer, wants_context
from aka_tui.agent.resume import adopt_edit
from aka_tui.bench.evaluator.evaluate import EvalOptions
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.score import OpScore
from aka_tui.record.session_repo import SessionRepo

__all__ = ["AgentEvent", "AgentEventKind", "AgentLoop", "Attempt", "Injection", "LoopConfig", "LoopOutcome"]


@dataclass
class LoopConfig:
    """Budgets and knobs of one optimisation run."""

    iterations: int = 8
    wall_time_s: float | None = None
    target_s: float | None = None  # stop once S_op reaches this fraction of the roofline
    dropout_p: float = 0.5
    seed: int = 0
    noise_rel: float = 0.03  # a candidate must beat the incumbent's S_op by more than this fraction
    # A candidate within this fraction of the incumbent, or apparently better, is re-measured with the incumbent,
    # interleaved, before it can be accepted: on the H200 (2026-11-30) separate evaluations of one kernel
    # differed by up to 60%, and the loop had accepted no-op changes as wins.
    close_rel: float = 0.10
    remeasure_rounds: int = 3  # I, C, I, C, I, C: a true median of three each; fewer when the wall time is short
    screen: bool = True  # screen proposals on the weighted shapes before the full evaluation
    best_of: int = 1  # with an executor: propose k candidates per step, screen them in parallel, keep the best
    max_tokens: int | None = None  # model tokens (input + output, cache included) for the whole session
    max_cost_usd: float | None = None
    baseline: bool = True  # measure the eager reference first (its S is 0 by definition: a fallback)
    compile_for: int | None = None  # a GPU arch (90: sm_90) a winner must also compile for (docs/agent.md)


@dataclass(frozen=True)
class Injection:
    """A person's candidate, queued by `AgentLoop.inject` for the next iteration boundary."""

    source: str
    author: tuple[str, str]
    rationale: str
    point: dict[str, Any]


@dataclass
class _Proposed:
    """A step's proposal and what it was proposed from (the dropout mask, the incumbent's bottleneck)."""

    proposal: Proposal
    masked: dict[str, Any]
    bottleneck: str | None
    propose_next: Callable[..., Proposal] | None = None  # another proposal of the same step (best-of-k)


@dataclass(frozen=True)
class _Evaluated:
    """A step's evaluation: the screening's when it screened the candidate out, else the full one."""

    score: OpScore
    result: Any
    screened_out: bool


class AgentLoop:
    """One problem, one proposer, an evaluator, optional knowledge and an optional session recording."""

    def __init__(self, problem: Problem, proposer: Proposer, profile: HardwareProfile, options: EvalOptions,
                 config: LoopConfig, work_dir: Path, session: SessionRepo | None = None,
                 retrieve: Callable[[str], tuple[list[str], str]] | None = None,
                 on_event: Callable[[AgentEvent], None] | None = None, executor: Any = None) -> None:
        self.problem, self.proposer, self.profile = problem, proposer, profile
        self.executor = executor  # an aka_tui.executors.base.Executor, used for best-of-k screening
        self.options, self.config, self.work_dir = options, config, work_dir
        self.session, self.retrieve = session, retrieve
        self.on_event = on_event or (lambda _e: None)
        self._injections: list[Injection] = []
        self._lock = threading.Lock()
        self._stop_reason = ""
        self.clock: Callable[[], float] = time.monotonic  # the wall-time budget's clock (tests pass a fake one)
        self._budget = WallBudget(None, self.clock)
        self._measurer = self._new_measurer()

    def inject(self, source: str, author: tuple[str, str], rationale: str = "edited by a person",
               point: dict[str, Any] | None = None) -> None:
        """Queue a person's candidate (thread-safe). At the next iteration boundary it is evaluated, recorded as
        the person's commit and, when correct and real, becomes the incumbent the proposer continues from
        (the person's choice, so no noise margin applies). `point` is the tunable point it was edited from."""
        with self._lock:
            self._injections.append(Injection(source, author, rationale, dict(point or {})))

    def request_stop(self, reason: str = "stopped by the person") -> None:
        """Stop at the next iteration boundary (thread-safe; an evaluation in progress completes)."""
        self._stop_reason = reason

    def _take_injection(self) -> Injection | None:
        with self._lock:
            return self._injections.pop(0) if self._injections else None

    def _evaluate_injection(self, injection: Injection, iteration: int, outcome: LoopOutcome,
                            incumbent: Attempt | None) -> Attempt | None:
        """Evaluate and record a person's candidate; returns the incumbent from then on."""
        self._emit("candidate_injected", iteration=iteration, author=injection.author[0], rationale=injection.rationale)
        score, result = self._measurer.full(injection.source, iteration)
        adopted = score.correct and score.real
        point, tuned = adopt_edit(self.proposer, injection.source, injection.author[0], injection.point, adopted)
        proposal = Proposal(injection.source, "person", point, {}, injection.rationale, path=f"person {injection.author[0]}")
        attempt = Attempt(iteration, proposal, score, adopted, error=first_error(result))
        summary = (f"{'adopted' if adopted else 'not adopted'} edit by {injection.author[0]} S_op={score.s_op:.4f} "
                   f"{'correct' if score.correct else 'incorrect'}{'' if score.real else ' fallback'}")
        if self.session is not None:
            attempt.sha = self.session.record_candidate(
                iteration, injection.source, result.to_json(),
                {"proposer": "person", "path": proposal.path, "author": injection.author[0],
                 "rationale": injection.rationale, "point": point, "changed": {}}, summary,
                author=injection.author)
        outcome.attempts.append(attempt)
        self._emit("candidate_evaluated", iteration=iteration, s_op=score.s_op, s_raw=score.s_raw_op,
                   correct=score.correct, real=score.real, accepted=adopted, sha=attempt.sha,
                   author=injection.author[0], **({} if tuned is None else {"tuned_next": tuned}))
        return attempt if adopted else incumbent

    def _emit(self, kind: AgentEventKind, **data: Any) -> None:
        self.on_event(AgentEvent(kind, data))
        if self.session is not None:
            self.session.events.append(kind, **data)

    def _new_measurer(self) -> Measurer:
        """The evaluations of a run, timed in its budget (`run` starts a new budget, so a new measurer)."""
        return Measurer(self.problem, self.profile, self.options, self.work_dir, self._budget, self._emit)

    def _proposal_record(self, proposal: Proposal, bottleneck: str | None, masked: dict[str, Any],
                         screened_out: bool, **extra: Any) -> dict[str, Any]:
        """What a candidate commit records about its proposal (proposal.json)."""
        return {"proposer": self.proposer.name, "path": proposal.path or self.proposer.name,
                "kernel_id": proposal.kernel_id, "rationale": proposal.rationale, "point": proposal.point,
                "changed": {k: list(v) for k, v in proposal.changed.items()}, "bottleneck": bottleneck,
                "dropout": masked, "screened_out": screened_out, **extra}

    def _best_of_k(self, first: Proposal, propose_next: Callable[..., Proposal], iteration: int, incumbent: Attempt,
                   outcome: LoopOutcome, masked: dict[str, Any], bottleneck: str | None
                   ) -> tuple[Proposal, tuple[bool, OpScore, Any], int]:
        """Best-of-k: k proposals screened in parallel on the executor's slots (one GPU each); every one is
        recorded as a candidate, the best promising one goes on to the full evaluation. Returns it, its
        screening and the iteration number it gets (after the k-1 others)."""
        proposals = [first]
        for _ in range(4 * self.config.best_of):  # a few tries for k distinct sources
            if len(proposals) >= self.config.best_of:
                break
            extra = propose_next([p.point for p in proposals])
            if all(extra.source != p.source for p in proposals):
                proposals.append(extra)
        screens = self._measurer.screen_batch(self.executor, [p.source for p in proposals], iteration, incumbent,
                                              self.config.close_rel)
        best = max(range(len(proposals)), key=lambda r: (screens[r][0], screens[r][1].s_op, -r))
        self._emit("candidates_screened_in_parallel", iteration=iteration, k=len(proposals), best_rank=best,
                   s_ops=[sc[1].s_op for sc in screens], promising=[sc[0] for sc in screens])
        for rank, proposal in enumerate(proposals):
            if rank == best:
                continue
            promising, score, result = screens[rank]
            self._emit("candidate_proposed", iteration=iteration, rationale=proposal.rationale, path=proposal.path,
                       changed={k: list(v) for k, v in proposal.changed.items()}, masked=masked)
            attempt = Attempt(iteration, proposal, score, False, error=first_error(result))
            if self.session is not None:
                attempt.sha = self.session.record_candidate(
                    iteration, proposal.source, result.to_json(),
                    self._proposal_record(proposal, bottleneck, masked, True,
                                          best_of={"k": len(proposals), "rank": rank, "chosen": False}),
                    f"rejected (screened, best-of-{len(proposals)}) S_op={score.s_op:.4f}")
            outcome.attempts.append(attempt)
            self._emit("candidate_evaluated", iteration=iteration, s_op=score.s_op, s_raw=score.s_raw_op,
                       correct=score.correct, real=score.real, accepted=False, sha=attempt.sha, screened_out=True)
            iteration += 1
        return proposals[best], screens[best], iteration

    def _predict_iteration_s(self, incumbent: Attempt | None) -> float | None:
        """The next iteration's predicted worst-path duration (aka_tui/agent/budget.py)."""
        return self._budget.predict_iteration_s(
            incumbent is not None, self.config.screen, self.config.best_of > 1 and self.executor is not None,
            self.config.remeasure_rounds, self.config.compile_for is not None)

    def _wall_time_stop(self, predicted_s: float | None) -> str:
        """Why the next iteration may not start under the wall-time budget; "" when it may."""
        left_s = self._budget.left_s()
        if left_s <= 0:
            return "wall-time budget spent"
        if predicted_s is not None and predicted_s > left_s:
            return f"wall-time budget: next iteration predicted {predicted_s:.1f} s, {left_s:.1f} s left"
        return ""

    def _budget_spent(self) -> str:
        usage = getattr(self.proposer, "usage", None)
        if usage is None:
            return ""
        tokens = usage.input_tokens + usage.output_tokens + usage.cache_write_tokens + usage.cache_read_tokens
        if self.config.max_tokens is not None and tokens >= self.config.max_tokens:
            return f"token budget spent ({tokens} of {self.config.max_tokens})"
        if self.config.max_cost_usd is not None and usage.cost_usd >= self.config.max_cost_usd:
            return f"cost budget spent (${usage.cost_usd:.2f} of ${self.config.max_cost_usd:.2f})"
        return ""

    def run(self, incumbent: Attempt | None = None, first_iteration: int = 1,
            earlier: Sequence[Attempt] = ()) -> LoopOutcome:
        """Run the loop; `incumbent`, `first_iteration` and `earlier` (the attempts already recorded, the
        proposer's memory) continue an earlier run of the same session. The outcome holds the new attempts."""
        self._budget = WallBudget(self.config.wall_time_s, self.clock)
        self._measurer = self._new_measurer()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        outcome = LoopOutcome()
        if self.config.baseline:
            outcome.baseline_s_raw = self._measurer.baseline_s_raw()
            self._emit("baseline_measured", s_raw=outcome.baseline_s_raw, note="the reference is a fallback: S = 0")
        else:
            self._emit("baseline_skipped", note="the reference is a fallback: S = 0 (not measured)")
        iteration = first_iteration - 1
        for _step in range(self.config.iterations):
            if stop := self._stop_reason or self._budget_spent():
                outcome.stop_reason = stop
                break
            iteration, incumbent = self._take_injections(iteration, outcome, incumbent)
            predicted_s = self._predict_iteration_s(incumbent)
            if self._budget.limited and (stop := self._wall_time_stop(predicted_s)):
                outcome.stop_reason = stop
                break
            iteration += 1
            self._budget.iteration_started()
            self._emit("iteration_started", iteration=iteration,
                       predicted_s=round(predicted_s, 1) if predicted_s is not None else None)
            iteration, incumbent = self._step(iteration, incumbent, [*earlier, *outcome.attempts], outcome)
            self._budget.iteration_finished()
            if incumbent and self.config.target_s and incumbent.score.s_op >= self.config.target_s:
                outcome.stop_reason = f"target S_op {self.config.target_s} reached"
                break
        else:
            outcome.stop_reason = "iteration budget spent"
        iteration, incumbent = self._take_injections(iteration, outcome, incumbent)  # queued after the last step
        self._emit("session_finished", reason=outcome.stop_reason,
                   best_s=incumbent.score.s_op if incumbent else 0.0,
                   best_iteration=incumbent.iteration if incumbent else None)
        return outcome

    def _take_injections(self, iteration: int, outcome: LoopOutcome,
                         incumbent: Attempt | None) -> tuple[int, Attempt | None]:
        """Evaluate every queued person's candidate, one iteration each; the iteration and incumbent after them."""
        while (injection := self._take_injection()) is not None:
            iteration += 1
            incumbent = self._evaluate_injection(injection, iteration, outcome, incumbent)
        return iteration, incumbent

    def _step(self, iteration: int, incumbent: Attempt | None, history: list[Attempt],
              outcome: LoopOutcome) -> tuple[int, Attempt | None]:
        """One iteration: propose (best-of-k on an executor), evaluate, decide, record. Returns the iteration
        number reached (best-of-k records its k-1 others first) and the incumbent from then on."""
        proposed = self._propose(iteration, incumbent, history, self._context(iteration, incumbent, history))
        screened: tuple[bool, OpScore, Any] | None = None
        if incumbent is not None and self.config.best_of > 1 and self.executor is not None:
            assert proposed.propose_next is not None
            proposed.proposal, screened, iteration = self._best_of_k(
                proposed.proposal, proposed.propose_next, iteration, incumbent, outcome, proposed.masked,
                proposed.bottleneck)
        proposal = proposed.proposal
        self._emit("candidate_proposed", iteration=iteration, rationale=proposal.rationale, path=proposal.path,
                   changed={k: list(v) for k, v in proposal.changed.items()}, masked=proposed.masked)
        evaluated = self._evaluate(proposal, iteration, incumbent, screened)
        better, remeasured = self._decide(evaluated, proposal, iteration, incumbent)
        target_error = self._measurer.target_compile_error(iteration, self.config.compile_for) if better else ""
        better = better and not target_error
        attempt = self._record(iteration, proposed, evaluated, better, remeasured, outcome, target_error)
        return iteration, attempt if better else incumbent

    def _context(self, iteration: int, incumbent: Attempt | None, history: list[Attempt]) -> dict[str, Any]:
        """What a proposer that wants context gets: retrieved knowledge and the last attempt's error."""
        context: dict[str, Any] = {}
        if self.retrieve is not None:
            text = f"{self.problem.name} {self.problem.family}: {self.problem.description}"
            if incumbent is not None:
                text += f" ({bottleneck_of(incumbent.score, None)})"
            ids, knowledge = self.retrieve(text)
            context["knowledge"] = knowledge
            self._emit("knowledge_retrieved", iteration=iteration, ids=ids)
        if history and not history[-1].score.correct:
            context["last_error"] = history[-1].error
        return context

    def _propose(self, iteration: int, incumbent: Attempt | None, history: list[Attempt],
                 context: dict[str, Any]) -> _Proposed:
        """The proposer's first candidate, or its next step from the incumbent with the memory after dropout."""
        proposer = self.proposer
        if incumbent is None:
            recover = getattr(proposer, "recover", None)
            if history and callable(recover):  # the start was wrong: an accuracy step or another point, not it again
                proposal = recover([a.proposal.point for a in history], history[-1].error)
            else:
                proposal = proposer.first(context) if wants_context(proposer) else proposer.first()
            return _Proposed(proposal, {"masked_iterations": [], "masked_tactics": []}, None)
        inc: Attempt = incumbent
        wins = [a for a in history if a.accepted]
        memory = [MemoryRecord(a.iteration, a.proposal.rationale, a.score.s_op, a.proposal.point,
                               incumbent=a is inc, latest_win=bool(wins) and a is wins[-1])
                  for a in history]
        drop = apply_dropout(memory, self.proposer.tactics(), self.config.dropout_p,
                             dropout_rng(self.config.seed, iteration))
        masked = drop.record()
        bottleneck = bottleneck_of(inc.score, self.profile.empty_launch_us / 1e3 if self.profile.empty_launch_us else None)
        if wants_context(proposer):
            context["incumbent_source"] = inc.proposal.source
            context["incumbent_measurements"] = measurements_text(inc.score)
            context["memory"] = "\n".join(f"iteration {r.iteration}: S_op {r.s_op:.4f} — {r.summary}"
                                          for r in drop.kept if r.s_op is not None)

        def propose_next(also_seen: Sequence[dict[str, Any]] = ()) -> Proposal:
            """The proposer's next step; `also_seen` are points already proposed this step (best-of-k)."""
            args = (inc.proposal.point, [r.tactics for r in drop.kept] + list(also_seen), bottleneck,
                    drop.tactics_kept)
            return (proposer.propose(*args, context=context) if wants_context(proposer)
                    else proposer.propose(*args))

        return _Proposed(propose_next(), masked, bottleneck, propose_next)

    def _evaluate(self, proposal: Proposal, iteration: int, incumbent: Attempt | None,
                  screened: tuple[bool, OpScore, Any] | None) -> _Evaluated:
        """Screened first when there is an incumbent (unless best-of-k already did); the full evaluation when
        there is none, or when the screening found it promising."""
        if incumbent is not None and self.config.screen:
            promising, score, result = screened or self._measurer.screen(proposal.source, iteration, incumbent,
                                                                         self.config.close_rel)
            if not promising:
                return _Evaluated(score, result, screened_out=True)
        score, result = self._measurer.full(proposal.source, iteration)
        return _Evaluated(score, result, screened_out=False)

    def _decide(self, evaluated: _Evaluated, proposal: Proposal, iteration: int,
                incumbent: Attempt | None) -> tuple[bool, dict[str, Any]]:
        """Accepted or not: correct, real and better than the incumbent beyond the noise margin, confirmed by the
        interleaved re-measurement whenever it looks better or close. Also returns that re-measurement."""
        score = evaluated.score
        candidate_ok = not evaluated.screened_out and score.correct and score.real
        better = candidate_ok and (incumbent is None
                                   or score.s_op > incumbent.score.s_op * (1.0 + self.config.noise_rel))
        if (incumbent is not None and candidate_ok and self.config.remeasure_rounds > 0
                and score.s_op >= incumbent.score.s_op * (1.0 - self.config.close_rel)):
            return self._measurer.remeasure(iteration, incumbent, proposal.source, self.config.remeasure_rounds,
                                            self.config.noise_rel)
        return better, {}

    def _record(self, iteration: int, proposed: _Proposed, evaluated: _Evaluated, better: bool,
                remeasured: dict[str, Any], outcome: LoopOutcome, target_error: str = "") -> Attempt:
        """The attempt, committed to the session (if any), added to the outcome and announced (`target_error`:
        why a candidate that would have been accepted does not compile for the GPU)."""
        proposal, score, result, screened_out = proposed.proposal, evaluated.score, evaluated.result, evaluated.screened_out
        attempt = Attempt(iteration, proposal, score, better, error=target_error or first_error(result))
        skipped = " (not re-measured: budget)" if remeasured and not remeasured["rounds"] else ""
        summary = (f"{'accepted' if better else 'rejected'}{' (screened)' if screened_out else ''}{skipped} "
                   f"S_op={score.s_op:.4f} {'correct' if score.correct else 'incorrect'}"
                   f"{'' if score.real else ' fallback'}{f', {target_error}' if target_error else ''}")
        if self.session is not None:
            attempt.sha = self.session.record_candidate(
                iteration, proposal.source, result.to_json(),
                self._proposal_record(
                    proposal, proposed.bottleneck, proposed.masked, screened_out,
                    transcript=list(getattr(self.proposer, "transcript", [])[-1:]),
                    usage=vars(getattr(self.proposer, "usage", None)) if hasattr(self.proposer, "usage") else None,
                    **({"remeasure": remeasured} if remeasured else {}),
                    **({"target_compile": target_error} if target_error else {})),
                summary)
        outcome.attempts.append(attempt)
        self._emit("candidate_evaluated", iteration=iteration, s_op=score.s_op, s_raw=score.s_raw_op,
                   correct=score.correct, real=score.real, accepted=better, sha=attempt.sha,
                   screened_out=screened_out, why=one_line(attempt.error))
        return attempt
