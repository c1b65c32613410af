"""A recorded candidate against the same kernel re-measured here: per shape, recorded and here side by side,
with the columns that fit the panel's width."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from aka_tui.tui.iteration_view import IterationView, ShapeMetrics
from aka_tui.tui.widgets.metrics import GAP, spread_text, us_text


def _ratio(here: ShapeMetrics, recorded: ShapeMetrics | None) -> str:
    if recorded is None or not here.time_ms or not recorded.time_ms:
        return "-"
    return f"{here.time_ms / recorded.time_ms:.3g}×"


def _columns(here: IterationView, recorded: IterationView) -> list[tuple[str, list[str], int]]:
    """(header, cells, priority) per column; lower priorities are kept first when narrow."""
    by_id = {s.shape_id: s for s in recorded.shapes}
    rows = [(s, by_id.get(s.shape_id)) for s in here.shapes]
    return [
        ("shape", [s.shape_id for s, _ in rows], 0),
        ("T µs rec.", [us_text(r.time_ms if r else None) for _, r in rows], 0),
        ("T µs here", [us_text(s.time_ms) for s, _ in rows], 0),
        ("here/rec.", [_ratio(s, r) for s, r in rows], 1),
        ("p20–p80 here", [spread_text(s) for s, _ in rows], 2),
        ("S rec.", [f"{r.s:.4g}" if r else "-" for _, r in rows], 3),
        ("S here", [f"{s.s:.4g}" for s, _ in rows], 3),
        ("here", [s.status for s, _ in rows], 4),
    ]


def comparison(recorded: IterationView, here: IterationView, recorded_profile: str, here_profile: str,
               width: int = 200) -> RenderableType:
    """Header with S_op both ways, then per shape the recorded and re-measured times, ratio and spread."""
    state = "incorrect" if not here.correct else ("correct, a fallback" if not here.real else "correct, real")
    head = Text.assemble(
        (f"iteration {recorded.iteration} re-measured here (not recorded)\n", "bold"),
        f"recorded S_op {recorded.s_op:.4g} on {recorded_profile} · here S_op {here.s_op:.4g} on {here_profile} "
        f"(Δ {here.s_op - recorded.s_op:+.3g}) · here: {state}")
    columns = _columns(here, recorded)
    used, kept = 0, set[int]()
    for index, (header, cells, _priority) in sorted(enumerate(columns), key=lambda item: item[1][2]):
        need = max([len(header)] + [len(c) for c in cells]) + (GAP if kept else 0)
        if used + need <= width or not kept:
            kept.add(index)
            used += need
    table = Table(box=None, pad_edge=False, header_style="bold")
    shown = [column for index, column in enumerate(columns) if index in kept]
    for header, _cells, _priority in shown:
        table.add_column(header, no_wrap=True)
    for row in range(len(here.shapes)):
        table.add_row(*(cells[row] for _header, cells, _priority in shown))
    notes = []
    if len(shown) < len(columns):
        left = ", ".join(header for index, (header, _c, _p) in enumerate(columns) if index not in kept)
        notes.append(Text(f"not shown at this width: {left} (z zooms)", style="dim"))
    if recorded_profile != here_profile:
        notes.append(Text(f"S uses each machine's roofline ({recorded_profile} when recorded, {here_profile} here); "
                          "compare the times for the kernel itself.", style="dim"))
    if here.device == "cpu":
        notes.append(Text("here: the CPU Triton interpreter, whose timings are NOT representative of any GPU.",
                          style="dim"))
    if here.error:
        notes.append(Text(f"error here: {here.error}", style="red"))
    return Group(head, table, *notes)
