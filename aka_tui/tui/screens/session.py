"""The Session screen: run the agent live, watch iterations, accept, edit, export, continue recorded sessions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, RichLog, Sparkline, Static

from aka_tui.tui.agent_runner import AgentRunner, RunSettings, settings_from_config
from aka_tui.tui.iteration_view import IterationFacts, IterationView, make_view
from aka_tui.tui.messages import AgentEventReceived, IterationRecorded, LoopMessage, RunnerPhaseChanged
from aka_tui.tui.own_kernel import kernel_problem, start_kernel_problem, start_template
from aka_tui.tui.screens.kernel_files import edit_text, export_recorded
from aka_tui.tui.screens.session_recorded import RecordedSessions
from aka_tui.tui.session_status import status_text
from aka_tui.tui.widgets.candidate_panels import CandidatePanels, IterationList
from aka_tui.tui.widgets.metrics import panel_context


class SessionScreen(RecordedSessions, Screen[None]):
    """One live session at a time."""

    BINDINGS = [
        Binding("s", "start", "Start/continue", id="session.start"),
        Binding("space", "pause", "Pause", id="session.pause"),
        Binding("x", "stop", "Stop", id="session.stop"),
        Binding("a", "accept", "Accept", id="session.accept"),
        Binding("e", "edit", "Edit", id="session.edit"),
        Binding("w", "export", "Export", id="session.export"),
        Binding("n", "new_session", "New", id="session.new"),
        Binding("t", "next_tab", "Tab", id="session.tab"),
        Binding("i", "focus_iterations", "Iterations", id="session.iterations", show=False),
        Binding("z", "zoom", "Zoom code", id="session.zoom", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.problem_name: str | None = None
        self.runner: AgentRunner | None = None
        self.views: list[IterationView] = []
        self.recorded_dir: Path | None = None  # a recorded session shown here, continued on s
        self._incumbent: IterationView | None = None  # touched only by the loop's thread
        self._paused_for_edit = False
        self._problem: Any = None
        self._profile: Any = None
        self._recorded_meta: dict[str, Any] = {}
        self._start_text: str | None = None  # the person's own kernel, the start of the next session

    @property
    def _app(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="session-status", classes="status")
        with Horizontal(id="session-body"):
            with Vertical(classes="side"):
                yield Static("Iterations (i)", classes="panel-title")
                yield IterationList(id="session-iterations")
                yield Static("S_op per iteration", classes="panel-title")
                yield Sparkline([], id="score-spark")
                yield RichLog(id="agent-log", wrap=True, markup=False, max_lines=500, min_width=20)
            yield CandidatePanels(id="session-panels")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._update_status()
        self.set_problem(self.problem_name or self._app.current_problem)

    def on_screen_resume(self) -> None:
        self._update_status()  # Settings may have changed what a continue applies

    # ----- state ----------------------------------------------------------------------------------------
    def set_problem(self, problem: str | None) -> None:
        if not self.is_mounted:  # on_mount picks it up
            self.problem_name = problem
            return
        if self.runner is not None and self.runner.running and problem != self.problem_name:
            self.notify("a session is running: stop it (x) before starting another problem", severity="warning")
            return
        if problem != self.problem_name:
            self.problem_name = problem
            self._reset()
        self._update_status()

    def _reset(self) -> None:
        self.runner, self.views, self._incumbent, self.recorded_dir = None, [], None, None
        self._recorded_meta = {}
        self.query_one(IterationList).clear()
        self.query_one(Sparkline).data = []
        self.query_one(CandidatePanels).show(None, None, None)

    def _wanted(self) -> RunSettings | None:
        if self.problem_name is None or self._app.paths is None:
            return None
        return settings_from_config(self._app, self.problem_name)

    def _update_status(self) -> None:
        data = self._app.data
        where = "loading the suite…" if data is None else data.hardware_note()
        wanted = self._wanted()
        recorded_as = None
        if self.runner is None and self.recorded_dir is not None and wanted is not None and self._recorded_meta:
            from aka_tui.tui.session_resume import recorded_settings

            recorded_as = recorded_settings(wanted, self._recorded_meta)
        text = status_text(self.problem_name, self.runner, wanted, self.recorded_dir, len(self.views), where,
                           recorded_as)
        self.query_one("#session-status", Static).update(text)

    # ----- running --------------------------------------------------------------------------------------
    def _new_runner(self, settings: RunSettings) -> AgentRunner:
        return AgentRunner(settings, self._on_agent_event, on_message=lambda text: self.post_message(LoopMessage(text)),
                           proposer_factory=self._app.proposer_factory,
                           on_phase=lambda phase: self.post_message(RunnerPhaseChanged(phase)))

    def action_start(self) -> None:
        wanted = self._wanted()
        if wanted is None:
            self.notify("pick a problem first (F2, then o)", severity="warning")
            return
        if self._app.data is None:
            self.notify("the suite is still loading", severity="warning")
            return
        if self.runner is not None and self.runner.running:
            self.notify("already running; space pauses, x stops")
            return
        if self.runner is None and self.recorded_dir is not None:
            self._continue_recorded(False)
            return
        if self.runner is None or self.runner.session is None:
            own, self._start_text = self._start_text, None
            offline = wanted.proposer == "offline"
            self.runner = self._new_runner(replace(wanted, start_text=own) if own and offline else wanted)
            if own and not offline:
                self.runner.inject(own, None, f"written by {wanted.author[0]}")
            self._log(f"starting a session on {self.problem_name} ({wanted.proposer} proposer)")
        else:
            applied, kept = self.runner.apply(wanted)
            self._log("continuing the session" + (f"; applied {', '.join(applied)}" if applied else "")
                      + (f"; not applied to this session: {', '.join(kept)} (n starts a new one)" if kept else ""))
        self._run()

    def _run(self) -> None:
        assert self.runner is not None
        self.runner.start()
        self.run_worker(self.runner.run, thread=True, exclusive=True, group="agent", exit_on_error=False,
                        name="agent-loop", description=f"agent loop on {self.problem_name}")
        self._update_status()

    def action_new_session(self) -> None:
        if self.runner is not None and self.runner.running:
            self.notify("a session is running: stop it (x) first", severity="warning")
            return
        self._reset()
        self._log("a new session starts with s, with the settings of Settings (F6)")
        self._update_status()

    def action_pause(self) -> None:
        if self.runner is None or not self.runner.running:
            self.notify("nothing is running")
            return
        if self.runner.pause_requested:
            self.runner.resume()
            self._log("resumed")
        else:
            self.runner.pause()
            self._log("pausing at the next iteration boundary")
        self._update_status()

    def action_stop(self) -> None:
        if self.runner is None or not self.runner.running:
            self.notify("nothing is running")
            return
        self.runner.stop()
        self._log("stopping after the current evaluation")

    # ----- candidates -----------------------------------------------------------------------------------
    def selected_view(self) -> IterationView | None:
        iteration = self.query_one(IterationList).selected_iteration()
        return next((v for v in self.views if v.iteration == iteration), None)

    def _session_dir(self) -> Path | None:
        if self.runner is not None and self.runner.session is not None:
            return self.runner.session.path
        return self.recorded_dir

    def action_accept(self) -> None:
        view = self.selected_view()
        if view is None or self.runner is None or self.runner.session is None or view.sha is None:
            self.notify("no candidate of a live session selected (s continues a recorded one first)",
                        severity="warning")
            return
        if not (view.correct and view.real):
            self.notify(f"iteration {view.iteration} is {view.verdict}: only a correct, real kernel can be accepted",
                        severity="warning")
            return
        try:
            tag = self.runner.accept(view.sha, view.iteration)
        except Exception as exc:
            self._app.show_error(exc)
            return
        self._replace_view(view, tags=tuple(sorted(set(view.tags) | {tag})))
        self._log(f"accepted iteration {view.iteration}: tag {tag}")
        self.notify(f"tagged {tag}; choose where to export the kernel")
        self.action_export()

    def action_export(self) -> None:
        view, session_dir = self.selected_view(), self._session_dir()
        if view is None or session_dir is None:
            self.notify("no candidate selected", severity="warning")
            return
        export_recorded(self._app, session_dir, view.iteration, f"{self.problem_name}_iter{view.iteration:04d}.py",
                        lambda path: self._log(f"exported iteration {view.iteration} to {path}"))

    def action_edit(self) -> None:
        view = self.selected_view()
        if view is None and self.runner is None and self.recorded_dir is None and self.problem_name is not None:
            self._write_start()  # before any session: the person's own kernel starts it
            return
        if view is None or (self.runner is None and self.recorded_dir is None):
            self.notify("no candidate to edit yet", severity="warning")
            return
        if self.runner is None:
            self.notify("continue the recorded session first (s): an edit is evaluated in a live session",
                        severity="warning")
            return
        if self.runner.running and not self.runner.pause_requested:
            self.runner.pause()
            self._paused_for_edit = True
            self._log("pausing while you edit")
        edit_text(self._app, f"Edit iteration {view.iteration}'s kernel", view.kernel, kernel_problem,
                  lambda text: self.submit_edit(view, text))

    def _write_start(self) -> None:
        problem = self._app.data.problems.get(self.problem_name) if self._app.data is not None else None
        if problem is None:
            self.notify("the suite is still loading", severity="warning")
            return
        edit_text(self._app, f"Your kernel for {self.problem_name}", start_template(problem.name, problem.reference_path),
                  start_kernel_problem, self.submit_start)

    def submit_start(self, text: str | None) -> None:
        """A kernel the person wrote before the session: the offline agent starts from it and tunes it (another
        proposer evaluates it first); then the session starts."""
        if text is None:
            return
        self._start_text = text
        self._log("your kernel starts the session")
        self.action_start()

    def submit_edit(self, view: IterationView, text: str | None) -> None:
        """Queue the edited kernel; it is evaluated and recorded as the person's commit, then the agent goes on."""
        assert self.runner is not None
        if text is not None:
            self.runner.inject(text, self._recorded_point(view.iteration),
                               f"edited by {self.runner.settings.author[0]} from iteration {view.iteration}")
            self._log(f"your edit of iteration {view.iteration} is queued for evaluation")
        if self.runner.running:
            if self._paused_for_edit:
                self.runner.resume()
        elif text is not None:
            self.action_start()
        self._paused_for_edit = False
        self._update_status()

    def _recorded_point(self, iteration: int) -> dict[str, Any]:
        session_dir = self._session_dir()
        if session_dir is None:
            return {}
        try:
            proposal = json.loads((session_dir / "iterations" / f"{iteration:04d}" / "proposal.json").read_text())
            return dict(proposal.get("point") or {})
        except (OSError, ValueError):  # ValueError: damaged JSON, or bytes that are not UTF-8
            return {}

    def action_next_tab(self) -> None:
        self.query_one(CandidatePanels).next_tab()

    def action_focus_iterations(self) -> None:
        self.query_one(IterationList).focus()

    def action_zoom(self) -> None:
        from aka_tui.tui.widgets.candidate_panels import CodeTabs

        if self.maximized is not None:
            self.minimize()
        else:
            self.maximize(self.query_one(CodeTabs), container=False)

    # ----- events from the loop's thread ----------------------------------------------------------------
    def _on_agent_event(self, event: Any) -> None:
        """Runs in the loop's thread: post the event; after an evaluation, build and post the iteration view."""
        self.post_message(AgentEventReceived(event))
        if event.kind == "candidate_evaluated" and self.runner is not None and self.runner.session is not None:
            try:
                view = self._view_of(event.data)
            except Exception as exc:  # a view that cannot be built must not stop the loop
                self.post_message(LoopMessage(f"cannot show iteration {event.data.get('iteration')}: {exc}"))
                return
            if view.accepted:
                self._incumbent = view
            self.post_message(IterationRecorded(view))

    def _view_of(self, data: dict[str, Any]) -> IterationView:
        assert self.runner is not None and self.runner.session is not None
        iteration = int(data["iteration"])
        folder = self.runner.session.path / "iterations" / f"{iteration:04d}"
        facts = IterationFacts(bool(data.get("accepted")), str(data.get("author", "aka agent")), data.get("sha"),
                               screened_out=bool(data.get("screened_out")))
        return make_view(self.runner.problem, self.runner.profile, iteration, (folder / "kernel.py").read_text(),
                         json.loads((folder / "result.json").read_text()),
                         json.loads((folder / "proposal.json").read_text()), facts, self._incumbent)

    @on(AgentEventReceived)
    def _show_event(self, message: AgentEventReceived) -> None:
        from aka_tui.tui.event_lines import event_line

        line = event_line(message.event.kind, message.event.data)
        if line:
            self._log(line)
        data = message.event.data
        if message.event.kind == "session_finished":
            self._app.refresh_records()
            if data.get("best_iteration") is not None:
                self.call_after_refresh(self._select_iteration, int(data["best_iteration"]))  # a accepts the best
        elif message.event.kind == "baseline_measured" and self.runner is not None and self.runner.session:
            self._app.refresh_records()

    @on(RunnerPhaseChanged)
    def _phase_changed(self, message: RunnerPhaseChanged) -> None:
        runner = self.runner
        if message.phase == "error" and runner is not None and runner.error is not None:
            title, text = runner.error
            kept = " (everything recorded so far is kept)" if runner.session is not None else ""
            self._log(f"session stopped: {title}: {text}{kept}")
            if runner.removed_empty is not None:
                self._log(f"removed {runner.removed_empty.name}: it had recorded no candidate")
                runner.removed_empty = None
        if message.phase == "paused" and runner is not None:
            self._log(f"paused after {runner.last_boundary}")
        self._update_status()

    def _select_iteration(self, iteration: int) -> None:
        table = self.query_one(IterationList)
        try:
            table.move_cursor(row=table.get_row_index(str(iteration)))
        except Exception:
            pass

    def _add_view(self, view: IterationView) -> None:
        self.views.append(view)
        table = self.query_one(IterationList)
        table.add_view(view)
        table.move_cursor(row=table.row_count - 1)
        self.query_one(Sparkline).data = [v.s_op for v in self.views]
        self._show(view)

    @on(IterationRecorded)
    def _iteration_recorded(self, message: IterationRecorded) -> None:
        self._add_view(message.view)
        self._update_status()

    @on(LoopMessage)
    def _loop_message(self, message: LoopMessage) -> None:
        self._log(message.text)

    @on(DataTable.RowHighlighted, "#session-iterations")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        view = self.selected_view()
        if view is not None:
            self._show(view)

    def _show(self, view: IterationView) -> None:
        problem = self.runner.problem if self.runner is not None and self.runner.problem else self._problem
        profile = self.runner.profile if self.runner is not None and self.runner.profile else self._profile
        self.query_one(CandidatePanels).show(view, problem, profile, panel_context(profile))

    def _replace_view(self, view: IterationView, **changes: Any) -> None:
        new = replace(view, **changes)
        self.views = [new if v.iteration == view.iteration else v for v in self.views]
        self.query_one(IterationList).update_view(new)
        self._show(new)

    def _log(self, text: str) -> None:
        self.query_one("#agent-log", RichLog).write(text)
