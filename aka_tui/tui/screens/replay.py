"""The Replay screen: pick a recorded session, step or scrub through it, re-measure one here, continue it."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static, Tabs

from aka_tui.tui.iteration_view import IterationFacts, IterationView, build_views, make_view
from aka_tui.tui.screens.kernel_files import export_recorded
from aka_tui.tui.widgets.candidate_panels import CandidatePanels, CodeTabs, IterationList
from aka_tui.tui.widgets.comparison import comparison
from aka_tui.tui.widgets.metrics import panel_context

STEP_ACTIONS = ("step", "jump")  # left/right/home/end: the tab bar and text inputs keep these keys when focused


def scrub_bar(position: int, total: int, width: int = 20) -> str:
    """A text position indicator: ▕███▒░░░▏ 2/5."""
    if total <= 0:
        return "no iterations"
    filled = round(width * position / total)
    return "▕" + "█" * max(filled - 1, 0) + "▒" + "░" * (width - filled) + f"▏ {position}/{total}"


class ReplayScreen(Screen[None]):
    """The same panels as the Session screen, over a recorded session."""

    BINDINGS = [
        Binding("right,close_bracket", "step(1)", "Next", id="replay.next", priority=True),
        Binding("left,open_bracket", "step(-1)", "Prev", id="replay.previous", priority=True),
        Binding("home", "jump(0)", "First", id="replay.first", priority=True, show=False),
        Binding("end", "jump(-1)", "Last", id="replay.last", priority=True, show=False),
        Binding("t", "next_tab", "Tab", id="replay.tab"),
        Binding("m", "remeasure", "Re-measure", id="replay.remeasure"),
        Binding("c", "continue_here", "Continue", id="replay.continue"),
        Binding("w", "export", "Export", id="replay.export"),
        Binding("f", "focus_sessions", "Sessions", id="replay.sessions"),
        Binding("i", "focus_iterations", "Iterations", id="replay.iterations", show=False),
        Binding("z", "zoom", "Zoom code", id="replay.zoom", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.session_dir: Path | None = None
        self.problem: Any = None
        self.profile: Any = None
        self.views: list[IterationView] = []
        self.position = 0
        self._sessions_focused_once = False

    @property
    def _app(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Pick a recorded session (enter). Shipped examples are marked 'example:'.", id="replay-status",
                     classes="status")
        with Horizontal(id="replay-body"):
            with Vertical(classes="side"):
                yield Static("Sessions (f)", classes="panel-title")
                sessions: DataTable[str] = DataTable(id="replay-sessions", cursor_type="row")
                yield sessions
                yield Static("Iterations (i)", classes="panel-title")
                yield IterationList(id="replay-iterations")
                yield Static("", id="scrub")
            yield CandidatePanels(id="replay-panels")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#replay-sessions", DataTable)
        table.add_columns("its", "best S", "session")  # the name last: it scrolls when the column is narrow
        self._app.when_ready(self.fill_sessions, again=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stepping keys go to the tab bar or a text input when one of them has focus."""
        if action in STEP_ACTIONS and isinstance(self.focused, (Tabs, Input)):
            return False
        return True

    def fill_sessions(self) -> None:
        """(Re)list the recorded sessions, keeping the selected one selected."""
        data = self._app.data
        table = self.query_one("#replay-sessions", DataTable)
        selected = None
        if table.row_count:
            selected = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        table.clear()
        if data is None:
            return
        for s in data.records.sessions:
            table.add_row(str(s.iterations), "-" if s.best_s is None else f"{s.best_s:.4g}", s.label,
                          key=str(s.path))
        if selected is not None and any(str(s.path) == selected for s in data.records.sessions):
            table.move_cursor(row=table.get_row_index(selected))
        if not self._sessions_focused_once:
            self._sessions_focused_once = True
            table.focus()

    @on(DataTable.RowSelected, "#replay-sessions")
    def _session_selected(self, event: DataTable.RowSelected) -> None:
        self.open_session_dir(Path(str(event.row_key.value)))

    def open_session_dir(self, session_dir: Path) -> None:
        """Load a session's iterations in a thread and show the first."""
        if not self.is_mounted or not self.query("#replay-status"):  # not composed yet: try after a refresh
            self.app.call_after_refresh(self.open_session_dir, session_dir)
            return
        self.query_one("#replay-status", Static).update(f"loading {session_dir.name}…")
        self.run_worker(lambda: self._load(session_dir), thread=True, exclusive=True, group="replay-load",
                        exit_on_error=False, name="replay-load")

    def _load(self, session_dir: Path) -> None:
        import json

        data = self._app.data
        try:
            meta = json.loads((session_dir / "session.json").read_text())
        except (OSError, ValueError) as exc:  # ValueError: damaged JSON or bytes that are not UTF-8
            self.app.call_from_thread(self._app.show_error, f"{session_dir} is not a readable session ({exc})",
                                      "replay")
            return
        name = str(meta.get("problem"))
        if data is None or name not in data.problems:
            self.app.call_from_thread(self._app.show_error, f"session {session_dir.name} optimised {name!r}, which "
                                      "is not in the loaded suite", "replay")
            return
        problem = data.problems[name]
        from aka_tui.bench.roofline.hardware import get_profile

        try:
            profile = get_profile(str(meta.get("hardware_profile", data.profile.name)))
        except Exception:
            profile = data.profile
        views, problems = build_views(session_dir, problem, profile)
        self.app.call_from_thread(self._loaded, session_dir, meta, problem, profile, views, problems)

    def _loaded(self, session_dir: Path, meta: dict[str, Any], problem: Any, profile: Any,
                views: list[IterationView], problems: list[str]) -> None:
        self.session_dir, self.problem, self.profile, self.views = session_dir, problem, profile, views
        self._app.replay_source = session_dir
        table = self.query_one(IterationList)
        table.clear()
        for view in views:
            table.add_view(view)
        note = (f"[b]{session_dir.name}[/b] · {meta.get('problem')} · proposer {meta.get('proposer')} · recorded on "
                f"{meta.get('device')} (profile {profile.name}) · {len(views)} iterations · c continues it here")
        if problems:
            note += "\n[yellow]" + "; ".join(problems[:3]) + "[/yellow]"
        self.query_one("#replay-status", Static).update(note)
        self.position = 0
        if views:
            table.focus()
            self._show()
        else:
            self.query_one(CandidatePanels).show(None, problem, profile)
            self.query_one("#scrub", Static).update(scrub_bar(0, 0))

    def _show(self) -> None:
        if not self.views:
            return
        self.position = max(0, min(self.position, len(self.views) - 1))
        view = self.views[self.position]
        table = self.query_one(IterationList)
        if table.cursor_row != self.position:
            table.move_cursor(row=self.position)
        self.query_one("#scrub", Static).update(scrub_bar(self.position + 1, len(self.views)))
        self.query_one(CandidatePanels).show(view, self.problem, self.profile, panel_context(self.profile))

    @on(DataTable.RowHighlighted, "#replay-iterations")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = self.query_one(IterationList).cursor_row  # the cursor now, not when the (maybe stale) event left
        if row != self.position:
            self.position = row
            self._show()

    def action_step(self, delta: int) -> None:
        self.position += delta
        self._show()

    def action_jump(self, index: int) -> None:
        self.position = index if index >= 0 else len(self.views) - 1
        self._show()

    def action_next_tab(self) -> None:
        self.query_one(CandidatePanels).next_tab()

    def action_focus_sessions(self) -> None:
        self.query_one("#replay-sessions").focus()

    def action_focus_iterations(self) -> None:
        self.query_one(IterationList).focus()

    def action_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
        else:
            self.maximize(self.query_one(CodeTabs), container=False)

    def action_continue_here(self) -> None:
        if self.session_dir is None or self.problem is None:
            self.notify("open a session first (enter on the sessions list)", severity="warning")
            return
        self._app.continue_session(self.session_dir, self.problem.name)

    def action_export(self) -> None:
        if self.session_dir is None or not self.views:
            self.notify("open a session first", severity="warning")
            return
        view = self.views[self.position]
        export_recorded(self._app, self.session_dir, view.iteration,
                        f"{self.problem.name}_{self.session_dir.name}_iter{view.iteration:04d}.py")

    def action_remeasure(self) -> None:
        if not self.views:
            self.notify("open a session first", severity="warning")
            return
        view = self.views[self.position]
        self.notify(f"re-measuring iteration {view.iteration} on this machine…")
        self.run_worker(lambda: self._remeasure(view), thread=True, exclusive=True, group="replay-remeasure",
                        exit_on_error=False, name="replay-remeasure")

    def _remeasure(self, view: IterationView) -> None:
        from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate

        app = self._app
        profile = app.data.profile
        with tempfile.TemporaryDirectory(prefix="aka-remeasure-") as folder:
            path = Path(folder) / "kernel.py"
            path.write_text(view.kernel)
            options = EvalOptions(device="auto", tier=app.config.tier or None, cases=app.config.cases,
                                  **app.session_overrides.get("remeasure_options", {}))
            result = evaluate_candidate(self.problem, CandidateSpec.file(path), options)
        here = make_view(self.problem, profile, view.iteration, view.kernel, result.to_json(),
                         {"rationale": f"re-measured on this machine ({profile.name}); not recorded",
                          "author": "re-measured here"}, IterationFacts(False), None)
        self.app.call_from_thread(self._show_remeasured, here, profile, view)

    def _show_remeasured(self, here: IterationView, profile: Any, recorded: IterationView) -> None:
        if not self.views or self.views[self.position].iteration != recorded.iteration:
            self.notify(f"re-measured iteration {recorded.iteration}: step back to it to see the comparison")
            return
        recorded_profile = self.profile.name if self.profile is not None else "?"
        self.query_one(CandidatePanels).show_comparison(
            lambda width: comparison(recorded, here, recorded_profile, profile.name, width))
        self.notify(f"iteration {recorded.iteration}: recorded S_op {recorded.s_op:.4g}, here {here.s_op:.4g} "
                    f"on {profile.name}")
