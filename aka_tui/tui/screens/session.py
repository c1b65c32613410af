"""The Session screen: run the agent live, watch iterations, accept, edit, export."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, RichLog, Sparkline, Static
from textual.worker import Worker, WorkerState

from aka_tui.tui.agent_runner import AgentRunner, RunSettings
from aka_tui.tui.iteration_view import IterationFacts, IterationView, make_view
from aka_tui.tui.messages import AgentEventReceived, IterationRecorded, LoopMessage
from aka_tui.tui.screens.dialogs import PathPrompt, TextEditor
from aka_tui.tui.widgets.candidate_panels import CandidatePanels, IterationList
import aka_tui.safe_ast as safe_ast


def kernel_problem(text: str) -> str:
    """Why a kernel cannot be evaluated as typed ('' when it parses and defines class Model)."""
    try:
        tree = safe_ast.parse(text)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}: {exc.msg}"
    if not any(isinstance(node, ast.ClassDef) and node.name == "Model" for node in tree.body):
        return "a candidate must define class Model (the reference's init and forward arguments)"
    return ""


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
        setattr(settings, key, value)
    return settings


class SessionScreen(Screen[None]):
    """One live session at a time."""

    BINDINGS = [
        Binding("s", "start", "Start", id="session.start"),
        Binding("space", "pause", "Pause/resume", id="session.pause"),
        Binding("x", "stop", "Stop", id="session.stop"),
        Binding("a", "accept", "Accept", id="session.accept"),
        Binding("e", "edit", "Edit", id="session.edit"),
        Binding("w", "export", "Export", id="session.export"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.problem_name: str | None = None
        self.runner: AgentRunner | None = None
        self.views: list[IterationView] = []
        self._incumbent: IterationView | None = None  # touched only by the loop's thread
        self._paused_for_edit = False

    @property
    def _app(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="session-status", classes="status")
        with Horizontal(id="session-body"):
            with Vertical(classes="side"):
                yield Static("Iterations", classes="panel-title")
                yield IterationList(id="iterations")
                yield Static("S_op per iteration", classes="panel-title")
                yield Sparkline([], id="score-spark")
                yield RichLog(id="agent-log", wrap=True, markup=False, max_lines=500, min_width=30)
            yield CandidatePanels(id="session-panels")
        yield Footer()

    def on_mount(self) -> None:
        self._update_status()
        self.set_problem(self.problem_name or self._app.current_problem)

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
            self.runner = None
            self.views = []
            self._incumbent = None
            self.query_one(IterationList).clear()
            self.query_one(Sparkline).data = []
            self.query_one(CandidatePanels).show(None, None, None)
        self._update_status()

    def _state(self) -> str:
        if self.runner is None:
            return "not started (s starts)"
        if self.runner.running:
            return "paused at the next boundary (space resumes)" if self.runner.paused else "running"
        return "finished (s continues, e edits)" if self.views else "starting…"

    def _update_status(self, extra: str = "") -> None:
        app = self._app
        if self.problem_name is None:
            text = "No problem chosen: pick one on Problems (F2) and press o, or use the command palette (ctrl+p)."
        else:
            c = app.config
            where = app.data.hardware_note() if app.data else "loading…"
            path = f" · {self.runner.session.path}" if self.runner and self.runner.session else ""
            text = (f"[b]{self.problem_name}[/b] · proposer {c.proposer} · budget {c.iterations} iterations"
                    f"{f', {c.wall_time_s:g} s' if c.wall_time_s else ''} · dropout {c.dropout_p:g} · "
                    f"[b]{self._state()}[/b]{path}\n{where}")
        self.query_one("#session-status", Static).update(text + (f"\n{extra}" if extra else ""))

    # ----- actions --------------------------------------------------------------------------------------
    def action_start(self) -> None:
        if self.problem_name is None:
            self.notify("pick a problem first (F2, then o)", severity="warning")
            return
        if self._app.data is None:
            self.notify("the suite is still loading", severity="warning")
            return
        if self.runner is not None and self.runner.running:
            self.notify("already running; space pauses, x stops")
            return
        if self.runner is None:
            settings = settings_from_config(self._app, self.problem_name)
            self.runner = AgentRunner(settings, self._on_agent_event,
                                      on_message=lambda text: self.post_message(LoopMessage(text)),
                                      proposer_factory=self._app.proposer_factory)
            self._log(f"starting a session on {self.problem_name} ({settings.proposer} proposer)")
        else:
            self._log("continuing the session")
        self.runner.running = True
        self.run_worker(self._run_loop, thread=True, exclusive=True, group="agent", exit_on_error=False,
                        name="agent-loop", description=f"agent loop on {self.problem_name}")
        self._update_status()

    def _run_loop(self) -> None:
        assert self.runner is not None
        self.runner.run()

    def action_pause(self) -> None:
        if self.runner is None or not self.runner.running:
            self.notify("nothing is running")
            return
        if self.runner.paused:
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

    def selected_view(self) -> IterationView | None:
        iteration = self.query_one(IterationList).selected_iteration()
        return next((v for v in self.views if v.iteration == iteration), None)

    def action_accept(self) -> None:
        view = self.selected_view()
        if view is None or self.runner is None or view.sha is None:
            self.notify("no recorded candidate selected", severity="warning")
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
        self._ask_export(view)

    def action_export(self) -> None:
        view = self.selected_view()
        if view is None:
            self.notify("no candidate selected", severity="warning")
            return
        self._ask_export(view)

    def _ask_export(self, view: IterationView) -> None:
        default = f"{self.problem_name}_iter{view.iteration:04d}.py"
        self.app.push_screen(PathPrompt(f"Export iteration {view.iteration}'s kernel to:", default),
                             lambda path: self.export_kernel(view, path))

    def export_kernel(self, view: IterationView, path: str | None) -> None:
        if not path:
            return
        target = Path(path).expanduser()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(view.kernel)
        except OSError as exc:
            self._app.show_error(f"cannot write {target}: {exc}", "export failed")
            return
        self.notify(f"wrote {target}")
        self._log(f"exported iteration {view.iteration} to {target}")

    def action_edit(self) -> None:
        view = self.selected_view()
        if view is None or self.runner is None:
            self.notify("no candidate to edit yet", severity="warning")
            return
        if self.runner.running and not self.runner.paused:
            self.runner.pause()
            self._paused_for_edit = True
            self._log("paused while you edit")
        self.app.push_screen(TextEditor(f"Edit iteration {view.iteration}'s kernel", view.kernel, kernel_problem),
                             lambda text: self.submit_edit(view, text))

    def submit_edit(self, view: IterationView, text: str | None) -> None:
        """Queue the edited kernel; it is evaluated and recorded as the person's commit, then the agent goes on."""
        assert self.runner is not None
        if text is not None:
            point = self._recorded_point(view.iteration)
            self.runner.inject(text, point, f"edited by {self.runner.settings.author[0]} from iteration "
                                            f"{view.iteration}")
            self._log(f"your edit of iteration {view.iteration} is queued for evaluation")
        if self.runner.running:
            if self._paused_for_edit:
                self.runner.resume()
        elif text is not None:
            self.action_start()
        self._paused_for_edit = False
        self._update_status()

    def _recorded_point(self, iteration: int) -> dict[str, Any]:
        if self.runner is None or self.runner.session is None:
            return {}
        try:
            proposal = json.loads((self.runner.session.path / "iterations" / f"{iteration:04d}" /
                                   "proposal.json").read_text())
            return dict(proposal.get("point") or {})
        except (OSError, json.JSONDecodeError):
            return {}

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
        facts = IterationFacts(bool(data.get("accepted")), str(data.get("author", "aka agent")), data.get("sha"))
        return make_view(self.runner.problem, self.runner.profile, iteration, (folder / "kernel.py").read_text(),
                         json.loads((folder / "result.json").read_text()),
                         json.loads((folder / "proposal.json").read_text()), facts, self._incumbent)

    @on(AgentEventReceived)
    def _show_event(self, message: AgentEventReceived) -> None:
        d, kind = message.event.data, message.event.kind
        lines = {
            "baseline_measured": lambda: f"baseline (eager reference): S_raw_op {d['s_raw']:.4f} — a fallback, S = 0",
            "iteration_started": lambda: f"iteration {d['iteration']} started",
            "knowledge_retrieved": lambda: f"  knowledge: {', '.join(d['ids'][:6])}",
            "candidate_proposed": lambda: f"  proposal: {d['rationale']}",
            "candidate_injected": lambda: f"iteration {d['iteration']}: evaluating the edit by {d['author']}",
            "candidates_remeasured": lambda: f"  close call re-measured: {'accepted' if d['accepted'] else 'kept'}",
            "candidate_evaluated": lambda: (f"  S_op {d['s_op']:.4f} "
                                            f"{'correct' if d['correct'] else 'INCORRECT'}"
                                            f"{'' if d['real'] else ', fallback'} → "
                                            f"{'ACCEPTED' if d['accepted'] else 'rejected'}"),
            "session_finished": lambda: f"finished: {d['reason']}; best S_op {d['best_s']:.4f}",
        }
        if kind in lines:
            self._log(lines[kind]())
        if kind == "session_finished" and d.get("best_iteration") is not None:
            self.call_after_refresh(self._select_iteration, int(d["best_iteration"]))  # a then accepts the best
        self._update_status()

    def _select_iteration(self, iteration: int) -> None:
        table = self.query_one(IterationList)
        try:
            table.move_cursor(row=table.get_row_index(str(iteration)))
        except Exception:
            pass

    @on(IterationRecorded)
    def _add_iteration(self, message: IterationRecorded) -> None:
        view: IterationView = message.view
        self.views.append(view)
        table = self.query_one(IterationList)
        table.add_view(view)
        table.move_cursor(row=table.row_count - 1)
        self.query_one(Sparkline).data = [v.s_op for v in self.views]
        self._show(view)

    @on(LoopMessage)
    def _loop_message(self, message: LoopMessage) -> None:
        self._log(message.text)

    @on(DataTable.RowHighlighted, "#iterations")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        view = self.selected_view()
        if view is not None:
            self._show(view)

    def _show(self, view: IterationView) -> None:
        assert self.runner is not None
        self.query_one(CandidatePanels).show(view, self.runner.problem, self.runner.profile)

    def _replace_view(self, view: IterationView, **changes: Any) -> None:
        from dataclasses import replace

        new = replace(view, **changes)
        self.views = [new if v.iteration == view.iteration else v for v in self.views]
        table = self.query_one(IterationList)
        table.update_cell(str(view.iteration), table.ordered_columns[1].key, new.verdict + (" ⚑" if new.tags else ""))
        self._show(new)

    def _log(self, text: str) -> None:
        self.query_one("#agent-log", RichLog).write(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "agent":
            return
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            from aka_tui.tui.app import error_text

            title, message = error_text(event.worker.error)
            self._log(f"session stopped: {title}: {message} (everything recorded so far is kept)")
            if self.runner is not None:
                self.runner.running = False
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self._update_status()
