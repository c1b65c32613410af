"""The roofline plot: arithmetic intensity (FLOP/B) against achieved FLOP/s, log-log, with the memory and
compute ceilings of the chosen hardware profile and one numbered marker per shape."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from aka_tui.tui.widgets.braille_canvas import BrailleCanvas

MARKERS = "123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class PlotPoint:
    label: str
    intensity: float  # FLOP per byte
    flops_per_s: float
    real: bool


@dataclass(frozen=True)
class PlotData:
    """Ceilings and points; `peak_flops_per_s` on the problem's execution path."""

    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    points: tuple[PlotPoint, ...] = ()
    title: str = ""


def _exp_label(value: float) -> str:
    exponent = round(math.log10(value))
    return f"1e{exponent}"


def render_plot(data: PlotData | None, width: int, height: int) -> Text:
    """The plot as styled text of `width` × `height` cells (axes and labels included)."""
    if data is None or width < 24 or height < 7:
        return Text("roofline plot: no measurements yet" if data is None else "(too small)", style="dim")
    margin, plot_w, plot_h = 6, width - 7, height - 3
    ridge = data.peak_flops_per_s / data.bandwidth_bytes_per_s
    xs = [p.intensity for p in data.points if p.intensity > 0] + [ridge]
    ys = [p.flops_per_s for p in data.points if p.flops_per_s > 0] + [data.peak_flops_per_s]
    x_lo, x_hi = math.floor(math.log10(min(xs))) - 1, math.ceil(math.log10(max(xs))) + 1
    y_lo, y_hi = math.floor(math.log10(min(ys))) - 1, math.ceil(math.log10(max(ys)) + 0.3)
    canvas = BrailleCanvas(plot_w, plot_h)

    def to_dot(x: float, y: float) -> tuple[int, int]:
        fx = (math.log10(x) - x_lo) / (x_hi - x_lo)
        fy = (math.log10(y) - y_lo) / (y_hi - y_lo)
        return round(fx * (canvas.dot_width - 1)), round((1 - fy) * (canvas.dot_height - 1))

    previous = None
    for step in range(canvas.dot_width):
        x = 10 ** (x_lo + (x_hi - x_lo) * step / (canvas.dot_width - 1))
        y = min(data.peak_flops_per_s, x * data.bandwidth_bytes_per_s)
        point = to_dot(x, max(y, 10 ** y_lo))
        style = "cyan" if x < ridge else "magenta"
        if previous is not None:
            canvas.line(*previous, *point, style=style)
        previous = point
    for index, p in enumerate(data.points):
        if p.intensity > 0 and p.flops_per_s > 0:
            dx, dy = to_dot(p.intensity, p.flops_per_s)
            canvas.mark(dx // 2, dy // 4, MARKERS[index % len(MARKERS)], "bold green" if p.real else "bold red")
    text = Text()
    y_ticks = {round((1 - (k - y_lo) / (y_hi - y_lo)) * (plot_h - 1)): k for k in range(y_lo, y_hi + 1)}
    for row, cells in enumerate(canvas.rows()):
        label = _exp_label(10 ** y_ticks[row]) if row in y_ticks else ""
        text.append(label.rjust(margin - 1) + " │", style="dim")
        for character, style in cells:
            text.append(character, style=style or None)
        text.append("\n")
    axis = [" "] * plot_w
    for k in range(x_lo, x_hi + 1):
        col = round((k - x_lo) / (x_hi - x_lo) * (plot_w - 1))
        label = _exp_label(10 ** k)
        start = min(max(col - len(label) // 2, 0), plot_w - len(label))
        if all(c == " " for c in axis[max(start - 1, 0):start + len(label) + 1]):
            axis[start:start + len(label)] = list(label)
    text.append(" " * margin + "└" + "".join(axis)[: plot_w] + "\n", style="dim")
    text.append(" " * margin + f" x: intensity, FLOP/B · y: achieved FLOP/s · ridge {ridge:.3g} FLOP/B\n",
                style="dim")
    text.append(" " * margin + " ")
    text.append("memory ceiling", style="cyan")
    text.append(" · ", style="dim")
    text.append("compute ceiling", style="magenta")
    text.append(" · 1 2 …: shapes, ", style="dim")
    text.append("real", style="green")
    text.append(" / ", style="dim")
    text.append("fallback or failed", style="red")
    return text


class RooflinePlot(Widget):
    """Widget around `render_plot`; set `data` to redraw."""

    DEFAULT_CSS = """
    RooflinePlot { height: 16; }
    """
    data: reactive[PlotData | None] = reactive(None)

    def render(self) -> Text:
        return render_plot(self.data, self.size.width, self.size.height - 1)
