"""The panels of one candidate (Session and Replay): metrics, gauges, source/diff, roofline plot."""

from __future__ import annotations

from typing import Any

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from aka_tui.tui.iteration_view import IterationView
from aka_tui.tui.widgets.gauges import gauges, metrics_table
from aka_tui.tui.widgets.roofline_plot import PlotData, PlotPoint, RooflinePlot

ITERATION_COLUMNS = ("#", "verdict", "S_op", "Δ", "by")


def plot_data(view: IterationView | None, problem: Any, profile: Any) -> PlotData | None:
    """Ceilings of the problem's execution path on the profile, and one point per measured shape."""
    if problem is None or profile is None:
        return None
    entries = list(problem.roofline.values())
    path = entries[0].path if entries else "fp32"
    try:
        peak = profile.peak_flops_per_s(path if path != "none" else "fp32")
    except Exception:
        peak = profile.peak_flops_per_s("fp32")
    points = []
    if view is not None:
        for s in view.shapes:
            if s.intensity and s.time_ms and s.flops:
                points.append(PlotPoint(s.shape_id, s.intensity, s.flops / (s.time_ms * 1e-3),
                                        s.real and s.status == "passed"))
    return PlotData(peak, profile.bandwidth_bytes_per_s, tuple(points), f"{problem.name} on {profile.name}")


class IterationList(DataTable[str]):
    """Iterations: number, verdict, S_op, Δ against the incumbent, author."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns(*ITERATION_COLUMNS)

    def add_view(self, view: IterationView) -> None:
        by = "agent" if view.author in ("", "aka agent") else view.author
        self.add_row(str(view.iteration), view.verdict + (" ⚑" if view.tags else ""), f"{view.s_op:.4f}",
                     f"{view.delta:+.4f}", by, key=str(view.iteration))

    def selected_iteration(self) -> int | None:
        if self.row_count == 0:
            return None
        return int(str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value))


class CandidatePanels(Vertical):
    """Metrics and gauges on top; source and diff tabs beside the roofline plot below."""

    DEFAULT_CSS = """
    CandidatePanels { height: 1fr; }
    CandidatePanels #metrics { height: auto; max-height: 14; padding: 0 1; }
    CandidatePanels #gauges { height: auto; max-height: 8; padding: 0 1; }
    CandidatePanels #lower { height: 1fr; }
    CandidatePanels TabbedContent { width: 3fr; height: 1fr; }
    CandidatePanels #plot-box { width: 2fr; height: 1fr; }
    CandidatePanels RooflinePlot { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("metrics: no candidate yet", id="metrics")
        yield Static("", id="gauges")
        with Horizontal(id="lower"):
            with TabbedContent(id="code-tabs"):
                with TabPane("Source", id="tab-source"):
                    with VerticalScroll():
                        yield Static("", id="source")
                with TabPane("Diff vs incumbent", id="tab-diff"):
                    with VerticalScroll():
                        yield Static("", id="diff")
                with TabPane("Rationale", id="tab-rationale"):
                    yield Static("", id="rationale")
            with Vertical(id="plot-box"):
                yield Static("Roofline (log-log)", classes="panel-title")
                yield RooflinePlot()

    def show(self, view: IterationView | None, problem: Any, profile: Any) -> None:
        self.query_one("#metrics", Static).update(metrics_table(view))
        self.query_one("#gauges", Static).update(gauges(view))
        source = view.kernel if view else ""
        self.query_one("#source", Static).update(Syntax(source, "python", line_numbers=True) if source else "")
        self.query_one("#diff", Static).update(Syntax(view.diff(), "diff") if view else "")
        self.query_one("#rationale", Static).update(view.rationale if view else "")
        self.query_one(RooflinePlot).data = plot_data(view, problem, profile)
