"""Per-shape roofline gauges and the metrics table of one candidate."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from aka_tui.tui.iteration_view import IterationView


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def gauges(view: IterationView | None) -> RenderableType:
    """One bar per shape: S_raw as a fraction of the roofline; red when it is a fallback or failed."""
    if view is None:
        return Text("roofline gauges: no candidate yet", style="dim")
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, max_width=28)
    table.add_column(width=24)
    table.add_column(no_wrap=True)
    for shape in view.shapes:
        fraction = min(max(shape.s_raw, 0.0), 1.0)
        ok = shape.status == "passed" and shape.real
        bar = ProgressBar(total=1.0, completed=fraction, width=24, complete_style="green" if ok else "red",
                          finished_style="bold yellow")
        note = f"{shape.roofline_pct:6.2f}%" + ("" if ok else (" fallback" if shape.status == "passed"
                                                               else f" {shape.status}"))
        if shape.s_raw > 1.0:
            note += " held for audit (S>1)"
        table.add_row(shape.shape_id, bar, note)
    return table


def metrics_table(view: IterationView | None) -> RenderableType:
    """Time per shape, achieved bandwidth and FLOP/s, % of roofline, bottleneck, own share, foreign kernels."""
    if view is None:
        return Text("metrics: no candidate yet", style="dim")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("shape", "status", "T ms", "T_SOL ms", "S", "GB/s", "TFLOP/s", "% roof", "bound", "own"):
        table.add_column(name, no_wrap=True)
    foreign_lines = []
    for s in view.shapes:
        table.add_row(s.shape_id, s.status, _fmt(s.time_ms), _fmt(s.t_sol_ms), f"{s.s:.4f}", _fmt(s.achieved_gbps, 3),
                      _fmt(s.achieved_tflops, 3), f"{s.roofline_pct:.2f}", s.bottleneck or "-",
                      "-" if s.own_share is None else f"{s.own_share:.2f}")
        if s.foreign:
            foreign_lines.append(f"{s.shape_id}: " + ", ".join(f"{k}×{v}" for k, v in sorted(s.foreign.items())))
    header = Text.assemble(
        (f"iteration {view.iteration}  ", "bold"), (view.verdict, "green" if view.accepted else "yellow"),
        f"  S_op {view.s_op:.4f}  S_raw_op {view.s_raw_op:.4f}  Δ {view.delta:+.4f}  by {view.author}",
        (f"  tags: {', '.join(view.tags)}" if view.tags else ""))
    parts: list[RenderableType] = [header, table]
    if foreign_lines:
        parts.append(Text("foreign kernels / compute ops: " + "; ".join(foreign_lines), style="red"))
    if view.error:
        parts.append(Text(f"error: {view.error}", style="red"))
    if view.static_findings:
        parts.append(Text("static scan: " + "; ".join(view.static_findings[:4]), style="dim"))
    return Group(*parts)
