"""The panels of one candidate (Session and Replay): metrics, gauges, code tabs and the roofline plot.

Wide panels put the roofline plot beside the tabs; narrow ones (under NARROW_BELOW columns) give the tabs
the whole width and move the plot into a tab of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from aka_tui.tui.iteration_view import IterationView
from aka_tui.tui.widgets.gauges import GaugesView
from aka_tui.tui.widgets.metrics import MetricsView, PanelContext
from aka_tui.tui.widgets.roofline_plot import PlotData, PlotPoint, RooflinePlot
from aka_tui.tui.widgets.side_by_side import side_by_side

NARROW_BELOW = 110  # panel columns: below this the plot moves into a tab
TAB_ORDER = ("tab-source", "tab-diff", "tab-side", "tab-decision", "tab-here", "tab-plot")


@dataclass(frozen=True)
class IterationColumn:
    """A column of the iteration list; a new column (e.g. where a candidate came from) is one more entry."""

    label: str
    cell: Callable[[IterationView], str]


ITERATION_COLUMNS = (
    IterationColumn("#", lambda v: str(v.iteration)),
    IterationColumn("verdict", lambda v: v.verdict + (" ⚑" if v.tags else "")),
    IterationColumn("S_op", lambda v: f"{v.s_op:.4g}"),
    IterationColumn("Δ", lambda v: v.delta_text),
    IterationColumn("reason", lambda v: v.reason),
    IterationColumn("by", lambda v: "agent" if not v.by_person else v.author),
)


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
    """Iterations: number, verdict, S_op, Δ % against the incumbent, why, author."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for column in ITERATION_COLUMNS:
            self.add_column(column.label, key=column.label)

    def add_view(self, view: IterationView) -> None:
        self.add_row(*(column.cell(view) for column in ITERATION_COLUMNS), key=str(view.iteration))

    def update_view(self, view: IterationView) -> None:
        for column in ITERATION_COLUMNS:
            self.update_cell(str(view.iteration), column.label, column.cell(view))

    def selected_iteration(self) -> int | None:
        if self.row_count == 0:
            return None
        return int(str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value))


class CodeTabs(TabbedContent):
    """The source / diff / decision tabs; `z` maximizes them."""

    ALLOW_MAXIMIZE = True


def decision_text(view: IterationView) -> RenderableType:
    """Rationale of the proposal, then why the loop decided as it did (with the re-measured samples)."""
    parts: list[RenderableType] = [Text(f"Path: {view.path or '-'}", style="bold"), Text(""),
                                   Text("Rationale", style="bold"), Text(view.rationale or "-"), Text(""),
                                   Text(f"Decision: {view.verdict}", style="bold")]
    parts += [Text(line) for line in view.decision]
    if view.incumbent_s_op is not None:
        parts.append(Text(f"incumbent S_op before this iteration: {view.incumbent_s_op:.4g}", style="dim"))
    return Group(*parts)


class CandidatePanels(Vertical):
    """Metrics and gauges on top; code tabs (and, when wide, the roofline plot beside them) below."""

    DEFAULT_CSS = """
    CandidatePanels { height: 1fr; }
    CandidatePanels MetricsView { height: auto; max-height: 16; padding: 0 1; }
    CandidatePanels GaugesView { height: auto; max-height: 6; padding: 0 1; }
    CandidatePanels #lower { height: 1fr; }
    CandidatePanels CodeTabs { width: 3fr; height: 1fr; }
    CandidatePanels #plot-box { width: 2fr; height: 1fr; }
    CandidatePanels RooflinePlot { height: 1fr; }
    CandidatePanels TabPane { padding: 0 1; }
    CandidatePanels.narrow MetricsView { max-height: 10; }
    CandidatePanels.narrow GaugesView { max-height: 4; }
    CandidatePanels.narrow #plot-box { display: none; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view: IterationView | None = None
        self.context = PanelContext()
        self._plot: PlotData | None = None
        self.has_comparison = False
        self._comparison: Callable[[int], RenderableType] | None = None

    def compose(self) -> ComposeResult:
        yield MetricsView(id="metrics")
        yield GaugesView(id="gauges")
        with Horizontal(id="lower"):
            with CodeTabs(id="code-tabs"):
                with TabPane("Source", id="tab-source"):
                    with VerticalScroll():
                        yield Static("", id="source")
                with TabPane("Diff", id="tab-diff"):
                    with VerticalScroll():
                        yield Static("", id="diff")
                with TabPane("Side by side", id="tab-side"):
                    with VerticalScroll():
                        yield Static("", id="side-by-side")
                with TabPane("Decision", id="tab-decision"):
                    with VerticalScroll():
                        yield Static("", id="rationale")
                with TabPane("Here vs recorded", id="tab-here"):
                    with VerticalScroll():
                        yield Static("", id="here-vs-recorded")
                with TabPane("Roofline", id="tab-plot"):
                    yield RooflinePlot(id="plot-in-tab")
            with Vertical(id="plot-box"):
                yield Static("Roofline (log-log)", classes="panel-title")
                yield RooflinePlot(id="plot-beside")

    def on_mount(self) -> None:
        self.query_one(CodeTabs).hide_tab("tab-here")

    def _tab_width(self) -> int:
        return max(self.query_one(CodeTabs).size.width - 4, 40)

    def on_resize(self) -> None:
        if self.has_comparison and self._comparison is not None:
            self.query_one("#here-vs-recorded", Static).update(self._comparison(self._tab_width()))
        narrow = self.size.width < NARROW_BELOW
        self.set_class(narrow, "narrow")
        tabs = self.query_one(CodeTabs)
        if narrow:
            tabs.show_tab("tab-plot")
        else:
            if tabs.active == "tab-plot":
                tabs.active = "tab-source"
            tabs.hide_tab("tab-plot")

    def next_tab(self, step: int = 1) -> str:
        """Show the next (or previous) visible tab; returns its id."""
        tabs = self.query_one(CodeTabs)
        hidden = {"tab-here"} if not self.has_comparison else set()
        if not self.has_class("narrow"):
            hidden.add("tab-plot")
        visible = [t for t in TAB_ORDER if t not in hidden]
        current = tabs.active if tabs.active in visible else visible[0]
        tabs.active = visible[(visible.index(current) + step) % len(visible)]
        return tabs.active

    def show_comparison(self, render: Callable[[int], RenderableType]) -> None:
        """Show a re-measurement against the record (rendered for a width) in its own tab, and switch to it."""
        self._comparison = render
        self.query_one("#here-vs-recorded", Static).update(render(self._tab_width()))
        tabs = self.query_one(CodeTabs)
        tabs.show_tab("tab-here")
        tabs.active = "tab-here"
        self.has_comparison = True

    def show(self, view: IterationView | None, problem: Any, profile: Any, context: PanelContext | None = None) -> None:
        if self.has_comparison:
            self.has_comparison = False
            tabs = self.query_one(CodeTabs)
            if tabs.active == "tab-here":
                tabs.active = "tab-source"
            tabs.hide_tab("tab-here")
        self.view = view
        if context is not None:
            self.context = context
        self.query_one(MetricsView).show(view, self.context)
        self.query_one(GaugesView).show(view)
        source = view.kernel if view else ""
        self.query_one("#source", Static).update(Syntax(source, "python", line_numbers=True) if source else "")
        self.query_one("#diff", Static).update(Syntax(view.diff(), "diff") if view else "")
        self.query_one("#side-by-side", Static).update(
            side_by_side(view.incumbent_kernel, view.kernel, "incumbent", f"iteration {view.iteration}", 3)
            if view else "")
        self.query_one("#rationale", Static).update(decision_text(view) if view else "")
        self._plot = plot_data(view, problem, profile)
        for plot in self.query(RooflinePlot):
            plot.data = self._plot
