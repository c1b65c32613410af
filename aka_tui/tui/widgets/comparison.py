"""A recorded candidate against the same kernel re-measured here: per shape, recorded and here side by side."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from aka_tui.tui.iteration_view import IterationView, ShapeMetrics
from aka_tui.tui.widgets.metrics import spread_text, us_text




def _ratio(here: ShapeMetrics | None, recorded: ShapeMetrics | None) -> str:
    if here is None or recorded is None or not here.time_ms or not recorded.time_ms:
        return "-"
    return f"{here.time_ms / recorded.time_ms:.3g}×"


def comparison(recorded: IterationView, here: IterationView, recorded_profile: str, here_profile: str
               ) -> RenderableType:
    """Header with S_op both ways, then shape | status | T recorded | T here | spread here | ratio | S both ways."""
    head = Text.assemble(
        (f"iteration {recorded.iteration} re-measured here (not recorded)\n", "bold"),
        f"recorded S_op {recorded.s_op:.4g} on {recorded_profile} · here S_op {here.s_op:.4g} on {here_profile} "
        f"(Δ {here.s_op - recorded.s_op:+.3g}) · here: {here.verdict if here.correct else 'incorrect'}")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("shape", "here", "T µs rec.", "T µs here", "p20–p80 here", "here/rec.", "S rec.", "S here"):
        table.add_column(name, no_wrap=True, overflow="ellipsis")
    by_id = {s.shape_id: s for s in recorded.shapes}
    for s in here.shapes:
        before = by_id.get(s.shape_id)
        table.add_row(s.shape_id, s.status, us_text(before.time_ms if before else None), us_text(s.time_ms), spread_text(s),
                      _ratio(s, before), f"{before.s:.4g}" if before else "-", f"{s.s:.4g}")
    notes = []
    if recorded_profile != here_profile:
        notes.append(Text(f"S uses each machine's roofline ({recorded_profile} when recorded, {here_profile} here); "
                          "compare the times for the kernel itself.", style="dim"))
    if here.device == "cpu":
        notes.append(Text("here: the CPU Triton interpreter, whose timings are NOT representative of any GPU.",
                          style="dim"))
    if here.error:
        notes.append(Text(f"error here: {here.error}", style="red"))
    return Group(head, table, *notes)
