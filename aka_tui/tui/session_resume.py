"""Continuing a recorded session in the app (what `aka optimize --resume ID` does, steered from the UI).

The session keeps what defines it (proposer, model, seed, tier, cases, knowledge retrieval, as recorded in
session.json); the budgets come from Settings. A shipped example has no repository of its own: continuing
it continues a copy, cloned from its `history.bundle` into your sessions directory. No Textual here.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from aka_tui.tui.agent_runner import AgentRunner, RunSettings

AGENT_IDENTITY = ("aka agent", "agent@aka-tui.invalid")


def is_example(session_dir: Path) -> bool:
    """A shipped example: a session directory without its own repository (its history is a bundle)."""
    return not (session_dir / ".git").exists()


def copy_example(session_dir: Path, sessions_dir: Path) -> Path:
    """Clone an example's history bundle into `sessions_dir`; returns the copy (a session repository)."""
    from aka_tui.record.session_repo import SessionError

    bundle = session_dir / "history.bundle"
    if not bundle.is_file():
        raise SessionError(f"{session_dir} has no git repository and no history.bundle: it cannot be continued")
    target = sessions_dir / f"{session_dir.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    sessions_dir.mkdir(parents=True, exist_ok=True)
    commands = [["git", "clone", "-q", str(bundle), str(target)],
                ["git", "-C", str(target), "config", "user.name", AGENT_IDENTITY[0]],
                ["git", "-C", str(target), "config", "user.email", AGENT_IDENTITY[1]]]
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SessionError(f"cannot copy {session_dir.name} ({' '.join(command[:2])}): "
                               f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return target


def recorded_settings(settings: RunSettings, meta: dict[str, Any]) -> RunSettings:
    """The app's settings with what defines the recorded session put back."""
    replay_from = meta.get("replay_from")
    tier = meta.get("tier")
    return replace(settings, proposer=str(meta.get("proposer", settings.proposer)),
                   model=str(meta.get("model") or settings.model), seed=int(meta.get("seed", settings.seed)),
                   tier=str(tier) if tier else settings.tier, cases=int(meta.get("cases", settings.cases)),
                   use_kb=bool(meta.get("kb", settings.use_kb)),
                   replay_from=Path(replay_from) if replay_from else settings.replay_from)


def written_start(attempts: list[Any]) -> str | None:
    """The kernel a person wrote in the app to start the session, when one did (its first candidate): the
    offline proposer starts from it again, as no other path may apply to the operator."""
    from aka_tui.agent.starting_point import WRITTEN_IN_APP

    first = attempts[0] if attempts else None
    return first.proposal.source if first is not None and first.proposal.path == WRITTEN_IN_APP else None


def differences(settings: RunSettings, session_dir: Path) -> list[str]:
    """What would make continuing the session here questionable: a changed problem, other hardware, or
    another process running it (empty when it can simply continue)."""
    from aka_tui.agent.resume import check_resumable
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.record.recovery import running_owner
    from aka_tui.record.session_repo import read_meta

    meta = read_meta(session_dir)
    probe = AgentRunner(recorded_settings(settings, meta), lambda _e: None)
    problem = load_problem(probe.settings.problem_dir)
    _options, _device, profile = probe._options_and_profile(probe.settings.tier, probe.settings.cases)
    found = check_resumable(meta, problem, profile, force=True)
    owner = running_owner(session_dir)
    if owner is not None:
        found.append(f"session {session_dir.name} looks running (process {owner})")
    return found


def open_recorded(runner: AgentRunner, session_dir: Path, force: bool) -> list[str]:
    """Make `runner` continue the recorded session at `session_dir`; returns notes for the log.

    Raises SessionError when the problem or the hardware changed since it was recorded (unless `force`),
    or when another process is running it."""
    from aka_tui.agent.loop import LoopOutcome
    from aka_tui.agent.resume import (
        adopt_persons_incumbent,
        check_resumable,
        missing_evaluated_events,
        rebuild_attempts,
    )
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.record.recovery import claim, discard_uncommitted, running_owner
    from aka_tui.record.session_repo import SessionError, SessionRepo, read_meta

    meta = read_meta(session_dir)
    owner = running_owner(session_dir)
    if owner is not None and not force:
        raise SessionError(f"session {session_dir.name} looks running (process {owner}); stop it first")
    runner.settings = recorded_settings(runner.settings, meta)
    problem = load_problem(runner.settings.problem_dir)
    options, _device, profile = runner._options_and_profile(runner.settings.tier, runner.settings.cases)
    notes = [f"accepted a difference: {d}" for d in check_resumable(meta, problem, profile, force)]
    session = SessionRepo.open(session_dir)
    discarded = discard_uncommitted(session)
    attempts = rebuild_attempts(session, problem, profile)
    for a in missing_evaluated_events(session, attempts):  # killed between a commit and its event
        session.events.append("candidate_evaluated", iteration=a.iteration, s_op=a.score.s_op,
                              s_raw=a.score.s_raw_op, correct=a.score.correct, real=a.score.real,
                              accepted=a.accepted, sha=a.sha, recovered=True)
    runner.settings = replace(runner.settings, start_text=written_start(attempts))
    proposer = runner.proposer_factory(runner.settings, problem, profile)
    if hasattr(proposer, "position") and hasattr(proposer, "iterations"):  # replay: skip what is recorded
        proposer.position = min(len(attempts), len(proposer.iterations))
    first = session.next_iteration()
    incumbent = next((a for a in reversed(attempts) if a.accepted), None)
    adopt_persons_incumbent(proposer, incumbent)
    session.events.append("session_resumed", from_iteration=first, iterations=runner.settings.iterations,
                          discarded=discarded, incumbent_iteration=incumbent.iteration if incumbent else None)
    claim(session)
    runner.adopt_recorded(session, problem, profile, options, proposer, LoopOutcome(list(attempts)))
    if discarded:
        notes.append(f"discarded what a killed run left uncommitted: {', '.join(discarded)}")
    return notes
