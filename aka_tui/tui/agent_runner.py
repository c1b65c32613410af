"""Runs the AgentLoop for the Session screen: in a worker thread, with pause / stop / a person's edits.

No Textual here: the screen passes callbacks that post messages. Pausing happens at iteration boundaries
(the loop's thread blocks in the event callback after the baseline or a candidate is evaluated, and only then
is the run `paused`); stopping asks the loop to stop at the next boundary. Git writes from the screen (tags)
and from the loop share one lock. An error ends the run in the `error` phase with its one-line text; a
session that had recorded no candidate when it failed is removed (it holds nothing).
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from aka_tui.agent.proposers import Proposer
from aka_tui.record.session_repo import SessionRepo
from aka_tui.tui.error_lines import error_text

BOUNDARY_EVENTS = ("baseline_measured", "candidate_evaluated")
# Applied when a session continues; the others define the session and stay as it was recorded.
CONTINUE_APPLIES = ("iterations", "wall_time_s", "max_cost_usd", "dropout_p", "remeasure_rounds", "author")
SESSION_KEEPS = ("proposer", "model", "hardware", "tier", "cases", "seed", "use_kb")


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
    start_text: str | None = None  # a kernel the person wrote before the session started: its offline start


def settings_from_config(app: Any, problem: str) -> RunSettings:
    """RunSettings for a session on `problem` from the app's config (tests add overrides)."""
    c = app.config
    settings = RunSettings(
        problem_dir=app.paths.suite_dir / problem, sessions_dir=app.paths.sessions_dir, proposer=c.proposer,
        model=c.model, iterations=c.iterations, wall_time_s=c.wall_time_s or None,
        max_cost_usd=c.max_cost_usd or None, dropout_p=c.dropout_p, remeasure_rounds=c.remeasure_rounds,
        seed=c.seed, tier=c.tier or None, cases=c.cases, hardware=c.hardware or None, use_kb=c.use_kb,
        author=(c.author_name, c.author_email),
        replay_from=getattr(app, "replay_source", None))
    for key, value in app.session_overrides.items():
        if hasattr(settings, key):
            setattr(settings, key, value)
    return settings


def settings_changes(current: RunSettings, wanted: RunSettings) -> tuple[list[str], list[str]]:
    """(what continuing applies, what it cannot apply) between a session's settings and the wanted ones."""
    applied = [f"{name} {getattr(current, name)} → {getattr(wanted, name)}" for name in CONTINUE_APPLIES
               if getattr(current, name) != getattr(wanted, name) and name != "author"]
    kept = [f"{name} {getattr(wanted, name) or 'default'} (this session: {getattr(current, name) or 'default'})"
            for name in SESSION_KEEPS if getattr(current, name) != getattr(wanted, name)]
    return applied, kept


def make_proposer(settings: RunSettings, problem: Any, profile: Any, device: str = "cpu", tier: str | None = None,
                  log: Callable[[str], object] = lambda message: None) -> Proposer:
    """The proposer chosen in the settings, from the registry (errors are ProposerError with one line). The
    offline proposer starts where the command line's does: the knowledge base's kernel for the operator, else a
    transfer from a kernel whose semantics match, else a compiler seed (aka_tui/agent/starting_point.py); the
    model's brief carries the closest knowledge-base kernel as an example."""
    from aka_tui.agent.proposers import ProposerRequest
    from aka_tui.agent.proposers import make_proposer as build

    def report(message: str) -> None:
        log(message)

    if settings.proposer == "anthropic":
        _check_model_allowed()
    return build(ProposerRequest(
        settings.proposer, problem, profile, seed=settings.seed, model=settings.model,
        replay_from=settings.replay_from, device=device, tier=tier, log=report, start_text=settings.start_text,
        iterations=settings.iterations,
        replay_missing="the replay proposer needs a recorded session: pick one on the Replay screen"))


def _check_model_allowed() -> None:
    """A model's candidates need the sandbox (or the environment's explicit opt-out) and a plausible API key."""
    import os

    from aka_tui.bench.sandbox.bwrap import require_sandbox_for_model
    from aka_tui.errors import ProposerError
    from aka_tui.tui.config import KEY_ENV, api_key_status

    require_sandbox_for_model(None, os.environ.get("AKA_UNSAFE_NO_SANDBOX") == "1",
                              "AKA_UNSAFE_NO_SANDBOX=1 in the environment of aka")
    status = api_key_status()
    if status != "present":
        what = "is not set" if status == "absent" else "does not look like an Anthropic key (sk-ant-…)"
        raise ProposerError(f"{KEY_ENV} {what}: set it and restart the app, or choose the offline proposer "
                            "in Settings (F6)")


class AgentRunner:
    """One live session: `prepare` (or `open_recorded`) sets it up, `run` runs it (blocking), the UI steers."""

    def __init__(self, settings: RunSettings, on_event: Callable[[Any], None],
                 on_message: Callable[[str], object] | None = None,
                 proposer_factory: Callable[[RunSettings, Any, Any], Any] | None = None,
                 on_phase: Callable[[str], object] | None = None) -> None:
        self.settings = settings
        self.on_event = on_event
        self.on_message = on_message or (lambda _m: None)
        self.on_phase = on_phase or (lambda _p: None)
        self.proposer_factory = proposer_factory or self._proposer_here
        self.problem: Any = None
        self.profile: Any = None
        self.session: SessionRepo | None = None
        self.loop: Any = None
        self.outcome: Any = None
        self.phase = "idle"  # idle | starting | running | paused | stopping | finished | error
        self.error: tuple[str, str] | None = None
        self.finish_reason = ""
        self.last_boundary = ""  # "the baseline" or "iteration N": where a pause holds the loop
        self.removed_empty: Path | None = None
        self._loop_parts: dict[str, Any] = {}
        self._queued: list[tuple[str, dict[str, Any] | None, str]] = []
        self._resume = threading.Event()
        self._resume.set()

    @property
    def running(self) -> bool:
        return self.phase in ("starting", "running", "paused", "stopping")

    @property
    def pause_requested(self) -> bool:
        return not self._resume.is_set()

    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        self.on_phase(phase)

    def _options_and_profile(self, tier: str | None, cases: int) -> tuple[Any, str, Any]:
        from aka_tui.bench.evaluator.evaluate import EvalOptions, resolve_device, resolve_profile

        s = self.settings
        options = EvalOptions(device="auto", tier=tier, cases=cases, hardware=s.hardware, fuzz=s.fuzz)
        device = resolve_device(options.device)
        return options, device, resolve_profile(options, device)

    def _proposer_here(self, settings: RunSettings, problem: Any, profile: Any) -> Proposer:
        """make_proposer on this machine's device and the session's tier; the starting-point search reports to
        the session's log (a transfer or a compiler seed can take a minute on the CPU)."""
        from aka_tui.bench.evaluator.evaluate import resolve_tier

        options, device, _ = self._options_and_profile(settings.tier, settings.cases)
        return make_proposer(settings, problem, profile, device, resolve_tier(options, device),
                             self.on_message)

    def loop_config(self) -> Any:
        from aka_tui.agent.loop import LoopConfig

        s = self.settings
        return LoopConfig(iterations=s.iterations, wall_time_s=s.wall_time_s, dropout_p=s.dropout_p, seed=s.seed,
                          max_cost_usd=s.max_cost_usd, remeasure_rounds=s.remeasure_rounds)

    def prepare(self) -> None:
        """Load the problem, resolve device and profile, build the proposer and create the session repo."""
        from aka_tui.agent.loop import AgentLoop
        from aka_tui.agent.retriever import make_retriever
        from aka_tui.bench.problem.lookup import load_problem

        s = self.settings
        self.problem = load_problem(s.problem_dir)
        options, device, self.profile = self._options_and_profile(s.tier, s.cases)
        proposer = self.proposer_factory(s, self.problem, self.profile)  # fails before anything is written
        name = f"{self.problem.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        path = s.sessions_dir / name
        suffix = 1
        while path.exists():
            suffix += 1
            path = s.sessions_dir / f"{name}-{suffix}"
        created = SessionRepo.create(path, {
            "problem": self.problem.name, "problem_hash": self.problem.content_hash, "proposer": s.proposer,
            "seed": s.seed, "device": device, "hardware_profile": self.profile.name, "iterations": s.iterations,
            "dropout_p": s.dropout_p, "remeasure_rounds": s.remeasure_rounds, "tier": options.tier,
            "cases": s.cases, "kb": s.use_kb, "model": s.model or None,
            "problem_dir": str(s.problem_dir.resolve())})
        self.session = created
        retrieve = make_retriever(self.problem, self.profile, self.on_message) if s.use_kb else None
        self._loop_parts = {"proposer": proposer, "options": options, "retrieve": retrieve, "loop_class": AgentLoop}

    def adopt_recorded(self, session: SessionRepo, problem: Any, profile: Any, options: Any, proposer: Any,
                       outcome: Any) -> None:
        """Continue a recorded session (aka_tui/tui/session_resume.py prepares it)."""
        from aka_tui.agent.loop import AgentLoop
        from aka_tui.agent.retriever import make_retriever

        self.session, self.problem, self.profile, self.outcome = session, problem, profile, outcome
        retrieve = make_retriever(problem, profile, self.on_message) if self.settings.use_kb else None
        self._loop_parts = {"proposer": proposer, "options": options, "retrieve": retrieve, "loop_class": AgentLoop}

    def apply(self, wanted: RunSettings) -> tuple[list[str], list[str]]:
        """Take the budgets of `wanted` for the next run; returns (applied, not applied) descriptions."""
        applied, kept = settings_changes(self.settings, wanted)
        self.settings = replace(self.settings, **{name: getattr(wanted, name) for name in CONTINUE_APPLIES})
        return applied, kept

    def _forward(self, event: Any) -> None:
        self.on_event(event)
        if event.kind in BOUNDARY_EVENTS:
            self.last_boundary = ("the baseline" if event.kind == "baseline_measured"
                                  else f"iteration {event.data.get('iteration')}")
            if self.phase == "starting":
                self._set_phase("running")
            if not self._resume.is_set():
                self._set_phase("paused")
                self._resume.wait()
                if self.phase == "paused":
                    self._set_phase("running")
        elif event.kind == "session_finished":
            self.finish_reason = str(event.data.get("reason", ""))

    def start(self) -> None:
        """Mark the run as starting (on the UI thread, before the worker runs `run`)."""
        self.error, self.loop = None, None
        self._set_phase("starting")

    def run(self) -> Any:
        """Run (or continue) the loop until its budget is spent, it is stopped or it fails; blocking."""
        if self.phase != "starting":
            self.start()
        try:
            if self.session is None:
                self.prepare()
            assert self.session is not None
            parts = self._loop_parts
            self.loop = parts["loop_class"](self.problem, parts["proposer"], self.profile, parts["options"],
                                            self.loop_config(), self.session.path / ".work", self.session,
                                            retrieve=parts["retrieve"], on_event=self._forward)
            while self._queued:
                source, point, rationale = self._queued.pop(0)
                self.loop.inject(source, self.settings.author, rationale, point)
            earlier = list(self.outcome.attempts) if self.outcome is not None else []
            outcome = self.loop.run(incumbent=self.best_attempt, first_iteration=self.session.next_iteration(),
                                    earlier=earlier)
            outcome.attempts[:0] = earlier
            self.outcome = outcome
        except Exception as exc:  # shown as the session's error state, never a crash of the app
            self.error = error_text(exc)
            self._remove_if_empty()
            self._set_phase("error")
            return None
        finally:
            self._resume.set()
        self._set_phase("finished")
        return self.outcome

    def _remove_if_empty(self) -> None:
        """A session that failed before recording any candidate holds nothing: remove its directory."""
        session = self.session
        if session is None or self.outcome is not None or session.next_iteration() > 1:
            return
        shutil.rmtree(session.path, ignore_errors=True)
        self.removed_empty, self.session = session.path, None

    def pause(self) -> None:
        self._resume.clear()
        self.on_phase(self.phase)

    def resume(self) -> None:
        self._resume.set()
        self.on_phase(self.phase)

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.request_stop()
        if self.running:
            self._set_phase("stopping")
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
