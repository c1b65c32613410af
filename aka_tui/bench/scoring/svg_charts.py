"""Dependency-free SVG charts for reports: grouped horizontal bars and a log-log roofline scatter."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


@dataclass(frozen=True)
class Bar:
    """One row of a grouped bar chart: a label and one value per series (None: not measured)."""

    label: str
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class Point:
    """One roofline point: arithmetic intensity (FLOP/byte), attained FLOP/s, series index, tooltip."""

    intensity: float
    flops_per_s: float
    series: int
    title: str


def _text(x: float, y: float, body: str, anchor: str = "start", extra: str = "", size: int = 11) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-family="monospace" font-size="{size}" '
            f'{extra}>{escape(body)}</text>')


def _legend(series: list[str], x: float, y: float) -> list[str]:
    parts = []
    for i, name in enumerate(series):
        parts.append(f'<rect x="{x:.1f}" y="{y + 14 * i - 9:.1f}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(_text(x + 14, y + 14 * i, name))
    return parts


def bar_chart(title: str, bars: list[Bar], series: list[str], x_label: str, origin_y: float = 0.0,
              width: int = 900) -> tuple[list[str], float]:
    """SVG elements of a grouped horizontal bar chart starting at `origin_y`; returns (elements, height)."""
    label_w, row_h, bar_gap = 230.0, 6.0 + 9.0 * max(len(series), 1), 4.0
    plot_w = width - label_w - 60
    top = origin_y + 40 + 14 * len(series)
    peak = max([v for b in bars for v in b.values if v is not None] + [1e-9])
    scale_max = 10 ** math.ceil(math.log10(peak)) if peak > 1 else max(0.1, math.ceil(peak * 10) / 10)
    parts = [_text(10, origin_y + 18, title, extra='font-weight="bold"', size=13)]
    parts += _legend(series, label_w, origin_y + 34)
    for i, bar in enumerate(bars):
        y = top + i * (row_h + bar_gap)
        parts.append(_text(label_w - 6, y + row_h / 2 + 4, bar.label, anchor="end"))
        for j, value in enumerate(bar.values):
            if value is None:
                continue
            w = plot_w * min(value, scale_max) / scale_max
            parts.append(f'<rect x="{label_w:.1f}" y="{y + j * 9:.1f}" width="{max(w, 0.5):.1f}" height="8" '
                         f'fill="{PALETTE[j % len(PALETTE)]}"><title>{escape(bar.label)} · {escape(series[j])}: '
                         f'{value:.4g}</title></rect>')
    bottom = top + len(bars) * (row_h + bar_gap)
    parts.append(f'<line x1="{label_w}" y1="{top - 4:.1f}" x2="{label_w}" y2="{bottom:.1f}" stroke="#444"/>')
    for k in range(5):
        tick = scale_max * k / 4
        x = label_w + plot_w * k / 4
        parts.append(f'<line x1="{x:.1f}" y1="{bottom:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}" stroke="#444"/>')
        parts.append(_text(x, bottom + 16, f"{tick:.3g}", anchor="middle"))
    parts.append(_text(label_w + plot_w / 2, bottom + 32, x_label, anchor="middle"))
    return parts, bottom + 44 - origin_y


def _log_axis(lo: float, hi: float) -> tuple[int, int]:
    return math.floor(math.log10(lo)), math.ceil(math.log10(hi))


def roofline_scatter(title: str, points: list[Point], series: list[str], bandwidth_bytes_per_s: float,
                     peaks: dict[str, float], origin_y: float = 0.0, width: int = 900) -> tuple[list[str], float]:
    """SVG elements of a log-log roofline: attained FLOP/s against FLOP/byte, with the memory slope and
    one flat ceiling per compute path; returns (elements, height)."""
    left, plot_w, plot_h = 80.0, width - 280.0, 360.0
    top = origin_y + 40
    parts = [_text(10, origin_y + 18, title, extra='font-weight="bold"', size=13)]
    if not points:
        parts.append(_text(left, top + 20, "no shape with FLOPs, a time and a passing verdict to plot"))
        return parts, 70.0
    xs = [p.intensity for p in points]
    ys = [p.flops_per_s for p in points] + list(peaks.values())
    x0, x1 = _log_axis(min(xs) / 2, max(xs) * 2)
    y0, y1 = _log_axis(min(ys) / 2, max(ys) * 1.5)

    def px(v: float) -> float:
        return left + plot_w * (math.log10(v) - x0) / max(x1 - x0, 1)

    def py(v: float) -> float:
        return top + plot_h - plot_h * (math.log10(v) - y0) / max(y1 - y0, 1)

    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    for e in range(x0, x1 + 1):
        parts.append(_text(px(10.0 ** e), top + plot_h + 16, f"1e{e}", anchor="middle"))
    for e in range(y0, y1 + 1):
        parts.append(_text(left - 6, py(10.0 ** e) + 4, f"1e{e}", anchor="end"))
    parts.append(_text(left + plot_w / 2, top + plot_h + 34, "arithmetic intensity (FLOP/byte)", anchor="middle"))
    parts.append(_text(14, top + plot_h / 2, "attained FLOP/s", anchor="middle",
                       extra=f'transform="rotate(-90 14 {top + plot_h / 2:.1f})"'))
    lo_x, hi_x = 10.0 ** x0, 10.0 ** x1
    for name, peak in sorted(peaks.items(), key=lambda kv: kv[1]):
        knee = peak / bandwidth_bytes_per_s
        start = max(lo_x, min(knee, hi_x))
        parts.append(f'<polyline fill="none" stroke="#999" stroke-dasharray="4 3" points="'
                     f'{px(lo_x):.1f},{py(max(min(lo_x * bandwidth_bytes_per_s, peak), 10.0 ** y0)):.1f} '
                     f'{px(start):.1f},{py(min(start * bandwidth_bytes_per_s, peak)):.1f} '
                     f'{px(hi_x):.1f},{py(peak):.1f}"/>')
        parts.append(_text(px(hi_x) + 4, py(peak) + 4, f"{name} {peak / 1e12:.0f} TFLOP/s"))
    for p in points:
        colour = PALETTE[p.series % len(PALETTE)]
        parts.append(f'<circle cx="{px(p.intensity):.1f}" cy="{py(p.flops_per_s):.1f}" r="3" fill="{colour}" '
                     f'fill-opacity="0.7"><title>{escape(p.title)}</title></circle>')
    parts += _legend(series, left + plot_w + 10, top + plot_h - 14 * len(series))
    return parts, plot_h + 80


def document(elements: list[str], width: int, height: float) -> str:
    """Wrap elements in one standalone SVG document (white background)."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
            f'viewBox="0 0 {width} {height:.0f}">\n<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(elements) + "\n</svg>\n")
