"""Per-shape roofline gauges of one candidate: S_raw as a fraction of the roofline, sized to the panel."""

from __future__ import annotations

from rich.console import RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from aka_tui.tui.iteration_view import IterationView

NOTE_WIDTH = 18  # "100.00% fallback" and the like


def gauges(view: IterationView | None, width: int = 80) -> RenderableType:
    """One bar per shape; green when it passed as a real kernel, red when it is a fallback or failed."""
    if view is None:
        return Text("roofline gauges: no candidate yet", style="dim")
    name_width = min(max((len(s.shape_id) for s in view.shapes), default=8), 28, max(width // 3, 8))
    bar_width = max(min(width - name_width - NOTE_WIDTH - 4, 40), 6)
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, width=name_width, overflow="ellipsis")
    table.add_column(width=bar_width)
    table.add_column(no_wrap=True, overflow="ellipsis")
    for shape in view.shapes:
        fraction = min(max(shape.s_raw, 0.0), 1.0)
        ok = shape.status == "passed" and shape.real
        bar = ProgressBar(total=1.0, completed=fraction, width=bar_width, complete_style="green" if ok else "red",
                          finished_style="bold yellow")
        note = f"{shape.roofline_pct:6.2f}%" + ("" if ok else (" fallback" if shape.status == "passed"
                                                               else f" {shape.status}"))
        if shape.s_raw > 1.0:
            note += " held for audit (S>1)"
        table.add_row(shape.shape_id, bar, note)
    return table


class GaugesView(Static):
    """The gauges of the shown candidate, re-drawn when the panel's width changes."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.view: IterationView | None = None

    def show(self, view: IterationView | None) -> None:
        self.view = view
        self.update(gauges(view, max(self.size.width, 40)))

    def on_resize(self) -> None:
        self.update(gauges(self.view, max(self.size.width, 40)))
