"""The Session screen's recorded sessions: show one (from Replay's c), then continue it here on s.

A mixin of SessionScreen (it uses the screen's runner, views, log and status); the continuation itself is
aka_tui/tui/session_resume.py, which knows nothing of Textual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka_tui.tui.agent_runner import AgentRunner, RunSettings
from aka_tui.tui.iteration_view import IterationView
from aka_tui.tui.screens.dialogs import Confirm


class RecordedSessions:
    """Show a recorded session's iterations and continue it (the Session screen's part for recorded ones)."""

    runner: AgentRunner | None
    recorded_dir: Path | None
    problem_name: str | None
    app: Any
    _app: Any
    _incumbent: IterationView | None
    _problem: Any
    _profile: Any
    _recorded_meta: dict[str, Any]
    # Provided by SessionScreen and Screen (annotations only: nothing here shadows them)
    is_mounted: bool
    notify: Any
    query: Any
    run_worker: Any
    _add_view: Any
    _log: Any
    _new_runner: Any
    _reset: Any
    _run: Any
    _update_status: Any
    _wanted: Any

    def show_recorded(self, session_dir: Path, problem: str) -> None:
        """Show a recorded session's iterations; s continues it here."""
        if not self.is_mounted or not self.query("#session-status"):  # not composed yet: after a refresh
            self.app.call_after_refresh(self.show_recorded, session_dir, problem)
            return
        if self.runner is not None and self.runner.running:
            self.notify("a session is running: stop it (x) before opening another", severity="warning")
            return
        self.problem_name = problem
        self._reset()
        self.recorded_dir = session_dir
        self._log(f"recorded session {session_dir.name}: s continues it here with the budgets of Settings")
        self.run_worker(lambda: self._load_recorded(session_dir), thread=True, exclusive=True, group="session-load",
                        exit_on_error=False, name="session-load")
        self._update_status()

    def _load_recorded(self, session_dir: Path) -> None:
        from aka_tui.record.session_repo import read_meta
        from aka_tui.tui.iteration_view import build_views

        data = self._app.data
        problem = data.problems[self.problem_name]
        views, problems = build_views(session_dir, problem, data.profile)
        try:
            meta = read_meta(session_dir)
        except Exception as exc:  # SessionError: shown, and the session cannot continue
            meta, problems = {}, [*problems, str(exc)]
        self.app.call_from_thread(self._recorded_loaded, problem, data.profile, views, problems, meta)

    def _recorded_loaded(self, problem: Any, profile: Any, views: list[IterationView], problems: list[str],
                         meta: dict[str, Any]) -> None:
        self._problem, self._profile, self._recorded_meta = problem, profile, meta
        for view in views:
            self._add_view(view)
        self._incumbent = next((v for v in reversed(views) if v.accepted), None)
        for line in problems[:3]:
            self._log(line)
        self._update_status()

    def _continue_recorded(self, force: bool) -> None:
        assert self.recorded_dir is not None
        wanted = self._wanted()
        assert wanted is not None
        self._log(f"checking whether {self.recorded_dir.name} can continue here…")
        self.run_worker(lambda: self._prepare_recorded(wanted, force), thread=True, exclusive=True,
                        group="agent", exit_on_error=False, name="session-resume")

    def _prepare_recorded(self, wanted: RunSettings, force: bool) -> None:
        from aka_tui.tui.error_lines import error_text
        from aka_tui.tui.session_resume import copy_example, differences, is_example, open_recorded

        source = self.recorded_dir
        assert source is not None
        try:
            found = differences(wanted, source)
            if found and not force:
                self.app.call_from_thread(self._ask_force, found)
                return
            target = copy_example(source, wanted.sessions_dir) if is_example(source) else source
            runner = self._new_runner(wanted)
            notes = open_recorded(runner, target, force=True)
        except Exception as exc:
            title, message = error_text(exc)
            self.app.call_from_thread(self._log, f"cannot continue {source.name}: {title}: {message}")
            return
        self.app.call_from_thread(self._recorded_adopted, runner, source, target, notes)

    def _ask_force(self, found: list[str]) -> None:
        question = "Continue anyway? " + "; ".join(found) + " (scores would not be comparable)"
        self.app.push_screen(Confirm(question), lambda yes: self._continue_recorded(True) if yes else None)

    def _recorded_adopted(self, runner: AgentRunner, source: Path, target: Path, notes: list[str]) -> None:
        self.runner, self.recorded_dir = runner, None
        if target != source:
            self._log(f"a shipped example continues in a copy: {target}")
        for note in notes:
            self._log(note)
        session = runner.session
        assert session is not None  # open_recorded adopted the recorded session
        self._log(f"continuing {target.name} at iteration {session.next_iteration()} with the "
                  f"{runner.settings.proposer} proposer (as recorded) and a budget of {runner.settings.iterations}")
        self._app.refresh_records()
        self._run()
