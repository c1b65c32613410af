"""One problem: description, reference source, shapes with their roofline on the chosen profile, sessions."""

from __future__ import annotations

from typing import Any

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

SHAPE_COLUMNS = ("shape", "tier", "weight", "W FLOP", "Q bytes", "FLOP/B", "T_SOL µs", "bound", "path")


def shape_rows(problem: Any, profile: Any) -> list[tuple[str, ...]]:
    """Per shape: tier, weight, W, Q, arithmetic intensity, T_SOL on the profile and the ceiling that sets it."""
    from aka_tui.bench.roofline.bound import bound

    rows: list[tuple[str, ...]] = []
    for shape in problem.shapes.values():
        entry = problem.roofline.get(shape.shape_id)
        if entry is None:
            rows.append((shape.shape_id, shape.tier, f"{shape.weight:.2f}", "-", "-", "-", "-", "not cached", "-"))
            continue
        b = bound(entry, profile)
        rows.append((shape.shape_id, shape.tier, f"{shape.weight:.2f}", f"{entry.flops:.4g}",
                     f"{entry.bytes_total:.4g}", f"{b.arithmetic_intensity:.3g}", f"{b.t_sol_s * 1e6:.3f}",
                     b.bottleneck, entry.path))
    return rows


class ProblemDetailScreen(Screen[None]):
    """Reference, shapes, rooflines and recorded sessions of one problem."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="detail.back"),
        Binding("o", "optimize", "Optimize", id="detail.optimize"),
        Binding("p", "replay_session", "Replay session", id="detail.replay"),
    ]

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op = op

    def compose(self) -> ComposeResult:
        app: Any = self.app
        problem = app.data.problems[self.op]
        profile = app.data.profile
        yield Header()
        with VerticalScroll(id="detail-body"):
            yield Static(f"[b]{problem.name}[/b]  family {problem.family} · weight {problem.importance * 100:.1f}% "
                         f"of serving GPU time · {len(problem.shapes)} shapes\n{problem.description}",
                         classes="status", id="detail-head")
            yield Static(f"Shapes and roofline on [b]{profile.name}[/b] ({profile.display_name})",
                         classes="panel-title")
            yield DataTable(id="shape-table", cursor_type="row")
            yield Static("Recorded sessions (p replays the selected one)", classes="panel-title")
            yield DataTable(id="detail-sessions", cursor_type="row")
            yield Static("Reference (reference.py)", classes="panel-title")
            try:
                source = problem.reference_path.read_text()
            except OSError as exc:
                source = f"# cannot read {problem.reference_path}: {exc}"
            yield Static(Syntax(source, "python", line_numbers=True, word_wrap=False), id="reference")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        app: Any = self.app
        problem = app.data.problems[self.op]
        table = self.query_one("#shape-table", DataTable)
        table.add_columns(*SHAPE_COLUMNS)
        for row in shape_rows(problem, app.data.profile):
            table.add_row(*row)
        sessions = self.query_one("#detail-sessions", DataTable)
        sessions.add_columns("session", "proposer", "hardware", "iterations", "best S_op")
        for s in app.data.records.sessions_of(problem.name):
            sessions.add_row(s.label, s.proposer, s.hardware, str(s.iterations),
                             "-" if s.best_s is None else f"{s.best_s:.4g}", key=str(s.path))

    def action_optimize(self) -> None:
        app: Any = self.app
        app.pop_screen()
        app.open_session(self.op)

    def action_replay_session(self) -> None:
        from pathlib import Path

        table = self.query_one("#detail-sessions", DataTable)
        if table.row_count == 0:
            self.notify("no recorded session for this problem yet", severity="warning")
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        app: Any = self.app
        app.pop_screen()
        app.open_replay(Path(str(key)))
