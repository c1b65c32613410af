"""Runs the AgentLoop for the Session screen: in a worker thread, with pause / stop / a person's edits.

No Textual here: the screen passes an `on_event` callback that posts messages. Pausing happens at iteration
boundaries (the callback blocks the loop's thread after a candidate is evaluated); stopping asks the loop
to stop at the next boundary. Git writes from the screen (tags) and from the loop share one lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from aka_tui.agent.retriever import make_retriever
from aka_tui.record.events import EventLog
from aka_tui.record.session_repo import SessionRepo

BOUNDARY_EVENTS = ("baseline_measured", "candidate_evaluated")


@dataclass
class RunSettings:
    """Everything one live session needs (the Settings screen fills it)."""

    problem_dir: Path
    sessions_dir: Path
    proposer: str = "offline"
    model: str = ""
    replay_from: Path | None = None
    iterations: int = 4
    wall_time_s: float | None = None
    max_cost_usd: float | None = None
    dropout_p: float = 0.5
    remeasure_rounds: int = 3
    seed: int = 0
    tier: str | None = None
    cases: int = 1
    hardware: str | None = None
    use_kb: bool = True
    fuzz: int | None = 1
    author: tuple[str, str] = ("kernel engineer", "engineer@aka-tui.invalid")


class _LockedEventLog(EventLog):
    def __init__(self, path: Path, lock: threading.RLock) -> None:
        super().__init__(path)
        self._lock = lock

    def append(self, kind: str, **data: Any) -> Any:
        with self._lock:
            return super().append(kind, **data)


class LockedSessionRepo(SessionRepo):
    """A session repository whose commits and event appends are serialised across threads."""

    def __init__(self, path: Path, repo: Any) -> None:
        super().__init__(path, repo)
        self.lock = threading.RLock()
        self.events = _LockedEventLog(path / "events.jsonl", self.lock)

    def _commit(self, message: str, files: list[str], author: tuple[str, str]) -> str:
        with self.lock:
            return super()._commit(message, files, author)

    def tag_accepted(self, sha: str, name: str) -> str:
        with self.lock:
            return super().tag_accepted(sha, name)


def make_proposer(settings: RunSettings, problem: Any, profile: Any) -> Any:
    """The proposer chosen in the settings (errors are ProposerError with one line)."""
    if settings.proposer == "replay":
        from aka_tui.agent.replay import ReplayProposer
        from aka_tui.errors import ProposerError

        if settings.replay_from is None:
            raise ProposerError("the replay proposer needs a recorded session: pick one on the Replay screen")
        return ReplayProposer(settings.replay_from, problem.name)
    if settings.proposer == "anthropic":
        import os

        from aka_tui.agent.anthropic_proposer import DEFAULT_MODEL, AnthropicProposer
        from aka_tui.agent.brief import problem_brief
        from aka_tui.bench.sandbox import require_sandbox_for_model

        require_sandbox_for_model(None, os.environ.get("AKA_UNSAFE_NO_SANDBOX") == "1",
                                  "AKA_UNSAFE_NO_SANDBOX=1 in the environment of aka")

        return AnthropicProposer(problem_brief(problem, profile), model=settings.model or DEFAULT_MODEL)
    from aka_tui.agent.offline import OfflineProposer
    from aka_tui.knowledge.reference_kernels import kernels_for_op
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    return OfflineProposer(kernels_for_op(load_kb(default_kb_dir()), problem.name), seed=settings.seed)


class AgentRunner:
    """One live session: created by `prepare`, run (blocking) by `run`, steered from the UI thread."""

    def __init__(self, settings: RunSettings, on_event: Callable[[Any], None],
                 on_message: Callable[[str], None] | None = None,
                 proposer_factory: Callable[[RunSettings, Any, Any], Any] | None = None) -> None:
        self.settings = settings
        self.on_event = on_event
        self.on_message = on_message or (lambda _m: None)
        self.proposer_factory = proposer_factory or make_proposer
        self.problem: Any = None
        self.profile: Any = None
        self.session: LockedSessionRepo | None = None
        self.loop: Any = None
        self.outcome: Any = None
        self._loop_parts: dict[str, Any] = {}
        self._queued: list[tuple[str, dict[str, Any] | None, str]] = []
        self.running = False
        self._resume = threading.Event()
        self._resume.set()

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    def prepare(self) -> None:
        """Load the problem, resolve device and profile, build the proposer and create the session repo."""
        from aka_tui.agent.loop import AgentLoop, LoopConfig
        from aka_tui.bench.evaluate import EvalOptions, resolve_device, resolve_profile
        from aka_tui.bench.problem import load_problem

        s = self.settings
        self.problem = load_problem(s.problem_dir)
        options = EvalOptions(device="auto", tier=s.tier, cases=s.cases, hardware=s.hardware, fuzz=s.fuzz)
        device = resolve_device(options.device)
        self.profile = resolve_profile(options, device)
        proposer = self.proposer_factory(s, self.problem, self.profile)
        name = f"{self.problem.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        path = s.sessions_dir / name
        suffix = 1
        while path.exists():
            suffix += 1
            path = s.sessions_dir / f"{name}-{suffix}"
        created = SessionRepo.create(path, {
            "problem": self.problem.name, "problem_hash": self.problem.content_hash, "proposer": s.proposer,
            "seed": s.seed, "device": device, "hardware_profile": self.profile.name, "iterations": s.iterations,
            "dropout_p": s.dropout_p, "remeasure_rounds": s.remeasure_rounds})
        self.session = LockedSessionRepo(created.path, created.repo)
        retrieve = make_retriever(self.problem, self.profile, self.on_message) if s.use_kb else None
        config = LoopConfig(iterations=s.iterations, wall_time_s=s.wall_time_s, dropout_p=s.dropout_p, seed=s.seed,
                            max_cost_usd=s.max_cost_usd, remeasure_rounds=s.remeasure_rounds)
        self._loop_parts = {"proposer": proposer, "options": options, "config": config, "retrieve": retrieve,
                            "loop_class": AgentLoop}

    def _forward(self, event: Any) -> None:
        self.on_event(event)
        if event.kind in BOUNDARY_EVENTS:
            self._resume.wait()

    def run(self) -> Any:
        """Run (or continue) the loop until its budget is spent or it is stopped; blocking."""
        if self.session is None:
            self.prepare()
        assert self.session is not None
        parts = self._loop_parts
        self.loop = parts["loop_class"](self.problem, parts["proposer"], self.profile, parts["options"],
                                        parts["config"], self.session.path / ".work", self.session,
                                        retrieve=parts["retrieve"], on_event=self._forward)
        while self._queued:
            source, point, rationale = self._queued.pop(0)
            self.loop.inject(source, self.settings.author, rationale, point)
        previous = self.best_attempt
        self.running = True
        try:
            outcome = self.loop.run(incumbent=previous, first_iteration=self.session.next_iteration())
            if self.outcome is not None:
                outcome.attempts[:0] = self.outcome.attempts
            self.outcome = outcome
        finally:
            self.running = False
            self._resume.set()
        return self.outcome

    def pause(self) -> None:
        self._resume.clear()

    def resume(self) -> None:
        self._resume.set()

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.request_stop()
        self._resume.set()

    @property
    def best_attempt(self) -> Any:
        """The incumbent so far (the last accepted or adopted attempt), or None."""
        return self.outcome.incumbent if self.outcome is not None else None

    def inject(self, source: str, point: dict[str, Any] | None = None, rationale: str = "edited by a person") -> None:
        """Queue a person's kernel: the running loop takes it at its next boundary; otherwise the next `run`
        evaluates it first."""
        if self.running and self.loop is not None:
            self.loop.inject(source, self.settings.author, rationale, point)
        else:
            self._queued.append((source, point, rationale))

    def accept(self, sha: str, iteration: int) -> str:
        """Tag a recorded candidate as accepted; returns the tag."""
        if self.session is None:
            raise RuntimeError("no session yet")
        existing = {t.name for t in self.session.repo.tags}
        tag = f"{self.problem.name}-accepted-{iteration:04d}"
        if tag in existing:
            return tag
        return self.session.tag_accepted(sha, tag)
