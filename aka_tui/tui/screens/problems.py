"""The Problems screen: the suite as a sortable, filterable table."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, LoadingIndicator, Static

from aka_tui.tui.suite_rows import COLUMNS, ProblemRow, problem_rows, select_rows


class ProblemsScreen(Screen[None]):
    """Every operator of the suite; enter opens one, o starts a session on it."""

    BINDINGS = [
        Binding("enter", "open_problem", "Open", id="problems.open"),
        Binding("o", "optimize", "Optimize", id="problems.optimize"),
        Binding("s", "sort_next", "Sort", id="problems.sort"),
        Binding("r", "reverse", "Reverse", id="problems.reverse"),
        Binding("slash", "focus_filter", "Filter", id="problems.filter"),
        Binding("escape", "focus_table", "Table", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[ProblemRow] = []
        self.sort_column = 3  # weight, heaviest first
        self.sort_reverse = True

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading the suite…", id="hardware-note", classes="banner")
        yield Input(placeholder="filter by op, family, dtype or kernel (/)", id="filter")
        yield LoadingIndicator(id="problems-loading")
        table: DataTable[str] = DataTable(id="problems-table", cursor_type="row", zebra_stripes=True)
        table.display = False
        yield table
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for index, name in enumerate(COLUMNS):
            table.add_column(_label(name + "  "), key=str(index))  # room for the sort arrow
        self._app.when_ready(self.refresh_rows, again=True)

    def _mark_sorted_column(self) -> None:
        """▲ / ▼ after the sorted column's name (every label keeps two cells for it, so widths never change)."""
        table = self.query_one(DataTable)
        for index, name in enumerate(COLUMNS):
            arrow = (" ▼" if self.sort_reverse else " ▲") if index == self.sort_column else "  "
            table.columns[table.ordered_columns[index].key].label = _label(name + arrow)
        table.refresh()  # after table.clear(), which also drops the cached header row

    @property
    def _app(self) -> Any:
        return self.app

    def refresh_rows(self) -> None:
        """Rebuild the rows from the loaded suite (also after a reload)."""
        note = self.query_one("#hardware-note", Static)
        self.query_one("#problems-loading").display = False
        data = self._app.data
        if data is None:
            note.update(f"[b]cannot load the suite[/b]: {self._app.load_error}")
            note.add_class("warning")
            return
        note.update(data.hardware_note())
        note.set_class(data.interpreter, "warning")
        self.rows = problem_rows(data.problems, data.records)
        table = self.query_one(DataTable)
        first = not table.display
        table.display = True
        self._fill()
        if first:
            table.focus()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        selected = self.selected_op()
        table.clear()
        self._mark_sorted_column()
        shown = select_rows(self.rows, self.query_one("#filter", Input).value, self.sort_column, self.sort_reverse)
        for row in shown:
            table.add_row(*row.cells(), key=row.op)
        if selected is not None and selected in {r.op for r in shown}:
            table.move_cursor(row=table.get_row_index(selected))

    def selected_op(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except Exception:
            return None

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter" and self.rows:
            self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_focus_table()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = int(str(event.column_key.value))
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        self._fill()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_problem()

    def action_sort_next(self) -> None:
        self.sort_column = (self.sort_column + 1) % len(COLUMNS)
        self.sort_reverse = False
        self._fill()

    def action_reverse(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._fill()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one(DataTable).focus()

    def action_open_problem(self) -> None:
        op = self.selected_op()
        if op is None or self._app.data is None:
            return
        from aka_tui.tui.screens.problem_detail import ProblemDetailScreen

        self.app.push_screen(ProblemDetailScreen(op))

    def action_optimize(self) -> None:
        op = self.selected_op()
        if op is not None:
            self._app.open_session(op)


def _label(text: str) -> Any:
    from rich.text import Text

    return Text(text, style="bold")
