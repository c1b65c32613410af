"""The Session screen's status lines: what runs, with which settings, and in which state, in words."""

from __future__ import annotations

from pathlib import Path

from aka_tui.tui.agent_runner import AgentRunner, RunSettings, settings_changes


def state_text(runner: AgentRunner | None, recorded: Path | None, views: int) -> str:
    """The run's state as a person reads it, with the key that changes it."""
    if runner is None:
        if recorded is not None and not (recorded / ".git").exists():
            return f"recorded example, {views} iterations (s continues a copy of it here)"
        if recorded is not None:
            return f"recorded, {views} iterations (s continues it here)"
        return "not started (s starts)"
    phase, pausing = runner.phase, runner.pause_requested
    if phase == "starting":
        return "starting… (pauses after the baseline; space cancels)" if pausing else "starting…"
    if phase == "running":
        return "pausing at the next iteration boundary… (space cancels)" if pausing else "running"
    if phase == "paused":
        return f"paused after {runner.last_boundary} (space resumes)"
    if phase == "stopping":
        return "stopping after the current evaluation…"
    if phase == "error":
        title, message = runner.error or ("error", "")
        return f"[red]error: {title}: {message}[/red] (s tries again)"
    if phase == "finished":
        return f"finished: {runner.finish_reason or 'done'} (s continues, n starts a new session)"
    return "ready (s starts)"


def budget_text(s: RunSettings) -> str:
    """Proposer and budgets of a run, one phrase."""
    extra = "".join([f", {s.wall_time_s:g} s" if s.wall_time_s else "",
                     f", ${s.max_cost_usd:g}" if s.max_cost_usd else ""])
    return (f"proposer {s.proposer} · budget {s.iterations} iterations{extra} · dropout {s.dropout_p:g} · "
            f"re-measure {s.remeasure_rounds}")


def pending_text(current: RunSettings | None, wanted: RunSettings) -> str:
    """Settings that differ from the session's: which a continue applies, which it cannot."""
    if current is None:
        return ""
    applied, kept = settings_changes(current, wanted)
    parts = []
    if applied:
        parts.append("continuing applies " + ", ".join(applied))
    if kept:
        parts.append("[yellow]not applied to this session: " + ", ".join(kept) + " (n starts a new one)[/yellow]")
    return " · ".join(parts)


def status_text(problem: str | None, runner: AgentRunner | None, wanted: RunSettings | None,
                recorded: Path | None, views: int, where: str, recorded_as: RunSettings | None = None) -> str:
    """All status lines of the Session screen; `recorded_as` is what a shown recorded session would continue
    with (its own proposer and the like, the budgets of Settings)."""
    if problem is None or wanted is None:
        return ("No problem chosen: pick one on Problems (F2) and press o, continue a recorded session from "
                "Replay (F4, c), or use the command palette (ctrl+p).")
    current = runner.settings if runner is not None and runner.phase != "idle" else recorded_as
    shown = current or wanted
    session = runner.session.path.name if runner is not None and runner.session is not None else (
        recorded.name if recorded is not None else "")
    lines = [f"[b]{problem}[/b] · {budget_text(shown)} · [b]{state_text(runner, recorded, views)}[/b]",
             (f"session {session} · " if session else "") + where]
    pending = pending_text(current, wanted)
    if pending:
        lines.append(pending)
    return "\n".join(lines)
