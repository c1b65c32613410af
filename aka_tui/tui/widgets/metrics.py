"""The metrics of one candidate: a per-shape table that keeps the columns that fit the panel's width, the
compiled kernels' registers / spills / occupancy, and the notes a kernel engineer reads next to them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from aka_tui.tui.iteration_view import IterationView, ShapeMetrics


@dataclass(frozen=True)
class PanelContext:
    """What the panels need besides the view: the profile's name and kind, and the calibrated copy bandwidth."""

    profile_name: str = ""
    profile_measured: bool = False
    copy_gbps: float | None = None  # from `aka hw calibrate` on this SKU; None: not calibrated


def _g(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def us_text(value_ms: float | None) -> str:
    """A time in µs: four significant digits, whole µs from 1000 up (no exponents)."""
    if value_ms is None:
        return "-"
    value_us = value_ms * 1e3
    return f"{value_us:.0f}" if value_us >= 1000 else f"{value_us:.4g}"


def spread_text(s: ShapeMetrics) -> str:
    """The p20–p80 range of the timed calls, in µs."""
    if s.p20_ms is None or s.p80_ms is None:
        return "-"
    return f"{us_text(s.p20_ms)}–{us_text(s.p80_ms)}"


@dataclass(frozen=True)
class Column:
    """A metrics column: header, cell text, and priority (lower numbers are kept first when narrow)."""

    header: str
    cell: Callable[[ShapeMetrics, PanelContext], str]
    priority: int


COLUMNS = (
    Column("shape", lambda s, c: s.shape_id, 0),
    Column("status", lambda s, c: s.status, 3),
    Column("T µs", lambda s, c: us_text(s.time_ms), 0),
    Column("p20–p80 µs", lambda s, c: spread_text(s), 6),
    Column("T_SOL µs", lambda s, c: us_text(s.t_sol_ms), 1),
    Column("S", lambda s, c: f"{s.s:.4g}", 0),
    Column("% roof", lambda s, c: f"{s.roofline_pct:.2f}", 1),
    Column("% copy", lambda s, c: "n/c" if c.copy_gbps is None else _g(s.copy_pct(c.copy_gbps), 3), 4),
    Column("GB/s", lambda s, c: _g(s.achieved_gbps, 3), 2),
    Column("TFLOP/s", lambda s, c: _g(s.achieved_tflops, 3), 5),
    Column("bound", lambda s, c: s.bottleneck or "-", 4),
    Column("own", lambda s, c: "-" if s.own_share is None else f"{s.own_share:.2f}", 7),
)
GAP = 2  # columns are separated by two spaces (one of padding on each side)


def fitting_columns(view: IterationView, context: PanelContext, width: int) -> tuple[list[Column], list[Column]]:
    """(the columns that fit in `width`, in display order; the ones left out). Without a calibrated copy
    bandwidth there is no % copy column (the notes say "not calibrated")."""
    columns = [c for c in COLUMNS if c.header != "% copy" or context.copy_gbps is not None]
    widths = {c.header: max([len(c.header)] + [len(c.cell(s, context)) for s in view.shapes]) for c in columns}
    kept: set[str] = set()
    used = 0
    for column in sorted(columns, key=lambda c: c.priority):
        need = widths[column.header] + (GAP if kept else 0)
        if used + need <= width or not kept:
            kept.add(column.header)
            used += need
    return [c for c in columns if c.header in kept], [c for c in columns if c.header not in kept]


def kernel_lines(view: IterationView, interpreter: bool) -> list[str]:
    """Registers, spills, warps, stages, shared memory and occupancy of each compiled kernel."""
    configs: dict[str, dict[tuple[Any, ...], list[str]]] = {}  # values as recorded (JSON)
    for shape in view.shapes:
        for name, r in shape.kernel_resources.items():
            key = (r.get("n_regs"), r.get("n_spills"), r.get("num_warps"), r.get("num_stages"),
                   r.get("shared_bytes"), r.get("occupancy"), r.get("occupancy_limit"))
            configs.setdefault(name, {}).setdefault(key, []).append(shape.shape_id)
    if not configs:
        if interpreter:
            return ["registers / spills / occupancy: n/a (interpreter)"]
        return ["registers / spills / occupancy: not in this record (recorded before the evaluator kept them)"]
    lines = []
    for name, by_config in sorted(configs.items()):
        for (regs, spills, warps, stages, smem, occupancy, limit), shapes in by_config.items():
            occ = f"occupancy {float(occupancy) * 100:.0f}% ({limit})" if occupancy is not None else "occupancy -"
            where = f" on {', '.join(shapes)}" if len(by_config) > 1 else ""
            lines.append(f"{name}: {regs} regs · {spills} spills · {warps} warps · {stages} stages · "
                         f"{int(smem or 0) / 1024:.4g} KiB smem · {occ}{where}")
    return lines


def _notes(view: IterationView, context: PanelContext, left_out: list[Column]) -> list[Text]:
    kind = "measured" if context.profile_measured else "datasheet"
    copy = (f"% copy: of the calibrated copy bandwidth {context.copy_gbps:.4g} GB/s" if context.copy_gbps
            else "copy bandwidth not calibrated (`aka hw calibrate` on the GPU)")
    notes = [Text(f"% roof: of the {context.profile_name} roofline ({kind}) · {copy}", style="dim")]
    if left_out:
        notes.append(Text(f"not shown at this width: {', '.join(c.header for c in left_out)} (z zooms)", style="dim"))
    return notes


def metrics_renderable(view: IterationView | None, context: PanelContext, width: int) -> RenderableType:
    """Header line, the per-shape table that fits `width`, kernels, and the notes."""
    if view is None:
        return Text("metrics: no candidate yet", style="dim")
    shown, left_out = fitting_columns(view, context, width)
    table = Table(box=None, pad_edge=False, header_style="bold", expand=False)
    for column in shown:
        table.add_column(column.header, no_wrap=True, overflow="ellipsis")
    foreign_lines = []
    for s in view.shapes:
        table.add_row(*(column.cell(s, context) for column in shown))
        if s.foreign:
            foreign_lines.append(f"{s.shape_id}: " + ", ".join(f"{k}×{v}" for k, v in sorted(s.foreign.items())))
    header = Text.assemble(
        (f"iteration {view.iteration}  ", "bold"), (view.verdict, "green" if view.accepted else "yellow"),
        f"  S_op {view.s_op:.4g}  S_raw_op {view.s_raw_op:.4g}  Δ {view.delta_text}  by {view.author}",
        (f"  via {view.path}" if view.path else ""), (f"  tags: {', '.join(view.tags)}" if view.tags else ""))
    parts: list[RenderableType] = [header, Text(view.reason, style="italic"), table]
    parts += [Text(line, style="cyan") for line in kernel_lines(view, view.device == "cpu")]
    if foreign_lines:
        parts.append(Text("foreign kernels / compute ops: " + "; ".join(foreign_lines), style="red"))
    if view.error:
        parts.append(Text(f"error: {view.error}", style="red"))
    if view.static_findings:
        parts.append(Text("static scan: " + "; ".join(view.static_findings[:4]), style="dim"))
    return Group(*parts, *_notes(view, context, left_out))


class MetricsView(Static):
    """The metrics of the shown candidate, re-laid out when the panel's width changes."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("metrics: no candidate yet", **kwargs)  # type: ignore[arg-type]
        self.view: IterationView | None = None
        self.context = PanelContext()

    def show(self, view: IterationView | None, context: PanelContext) -> None:
        self.view, self.context = view, context
        self.update(metrics_renderable(view, context, max(self.size.width, 40)))

    def on_resize(self) -> None:
        self.update(metrics_renderable(self.view, self.context, max(self.size.width, 40)))


def panel_context(profile: Any) -> PanelContext:
    """The profile's name and kind, and the copy bandwidth `aka hw calibrate` measured on its SKU (if any)."""
    if profile is None:
        return PanelContext()
    copy_gbps = profile.hbm_bandwidth_tbps * 1e3 if profile.measured else None
    if copy_gbps is None:
        from aka_tui.bench.roofline.hardware import measured_profiles

        measured = measured_profiles().get(f"{profile.name}-measured")
        copy_gbps = measured.hbm_bandwidth_tbps * 1e3 if measured is not None else None
    return PanelContext(profile.name, bool(profile.measured), copy_gbps)
