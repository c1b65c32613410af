"""Render the paper's table (paper_table.Subject list) as Markdown and as one SVG picture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka_tui.bench.scoring.paper_table import Subject
from aka_tui.bench.scoring.report import wall_time_text
from aka_tui.bench.scoring.svg_charts import Bar, Point, bar_chart, document, roofline_scatter

ROW_HEADERS = ["op", "weight", "shapes", "naive", "hardened", "correct & real", "S_op", "S_raw_op",
               "S_e2e_raw", "vs eager", "vs compile", "production S (data)"]
MAX_AUTOTUNE_HEADER = "vs max-autotune"  # after "vs compile", when some subject has torch.compile max-autotune


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]


def _has_max_autotune(subjects: list[Subject]) -> bool:
    return any(r.vs_compile_max is not None for s in subjects for r in s.rows)


def _subject_section(subject: Subject, max_autotune: bool = False) -> list[str]:
    """`max_autotune`: with the speed-up over torch.compile(mode="max-autotune") column and fast_1."""
    at = ROW_HEADERS.index("vs compile") + 1
    headers = ROW_HEADERS[:at] + [MAX_AUTOTUNE_HEADER] * max_autotune + ROW_HEADERS[at:]
    rows = [[r.op, f"{r.weight:.4f}", str(r.shapes), _pct(r.naive_rate), _pct(r.hardened_rate), _pct(r.real_rate),
             _f(r.s_op), _f(r.s_raw_op), _f(r.s_e2e_raw_op), _f(r.vs_eager, 2), _f(r.vs_compile, 2),
             *([_f(r.vs_compile_max, 2)] if max_autotune else []), f"{_f(r.production_s)} {r.production_device}".strip()]
            for r in sorted(subject.rows, key=lambda r: -r.weight)]
    a: dict[str, Any] = subject.aggregate
    return [f"## {subject.label}", "",
            f"- device {subject.device} ({subject.hardware.get('display_name', '?')}, roofline profile "
            f"`{subject.hardware.get('name', '?')}`); wall time {wall_time_text(subject.wall_s, subject.merged_from)}", "",
            *_table(headers, rows), "",
            f"- **S_agg = {a.get('s_agg', 0):.4f}** (weights normalised over the ops evaluated); raw-weight form "
            f"{a.get('s_agg_raw_weight', 0):.4f}; S_raw_agg {a.get('s_raw_agg', 0):.4f}; "
            f"S_e2e_agg {a.get('s_e2e_agg', 0):.4f}; S_e2e_raw_agg {a.get('s_e2e_raw_agg', 0):.4f}",
            f"- fast_1{_fast_1_scope(a, len(subject.rows))} vs eager {_f(a.get('fast_1_vs_eager'), 2)}, vs torch.compile "
            f"{_f(a.get('fast_1_vs_compile'), 2)} (correct and real); ignoring fallback: vs eager "
            f"{_f(a.get('fast_1_vs_eager_ignoring_fallback'), 2)}, vs torch.compile "
            f"{_f(a.get('fast_1_vs_compile_ignoring_fallback'), 2)}"
            + (f"; vs torch.compile max-autotune {_f(a.get('fast_1_vs_compile_max'), 2)} (correct and real), "
               f"{_f(a.get('fast_1_vs_compile_max_ignoring_fallback'), 2)} ignoring fallback" if max_autotune else ""),
            f"- pass rates over {len(subject.rows)} ops: naive {_pct(a.get('naive_op_rate'))}, hardened "
            f"{_pct(a.get('hardened_op_rate'))}, correct and real {_pct(a.get('real_op_rate'))}; over shapes: "
            f"hardened {_pct(a.get('hardened_shape_rate'))}, correct and real {_pct(a.get('real_shape_rate'))}", ""]


def _fast_1_scope(aggregate: dict[str, Any], ops: int) -> str:
    """' (over the ops each baseline timed: eager 20, torch.compile 2 of 20)' when a baseline left ops out."""
    counts = aggregate.get("fast_1_ops") or {}
    names = {"vs_eager": "eager", "vs_compile": "torch.compile", "vs_compile_max": "torch.compile max-autotune"}
    partial = [f"{names[k]} {v} of {ops}" for k, v in counts.items() if 0 < v < ops]
    return f" (over the ops each baseline timed: {', '.join(partial)})" if partial else ""


NOTES = [
    "## How to read this", "",
    "- S = T_SOL / T on device time (the evaluator's GPU-saturated timing); counts only shapes that passed the "
    "hardened check with the candidate's own kernels. S_raw ignores the fallback verdict (baselines are "
    "fallbacks by definition: their S is 0, S_raw is shown).",
    "- S_e2e uses the end-to-end time of one call as a serving loop without CUDA graphs sees it: "
    "max(host time to issue the call, device time).",
    "- naive = one input, allclose(1e-2), no poisoning, fuzzing or attribution; '-' when the report has no naive "
    "verdicts. Pass rates are per shape within an op, per op in the aggregate.",
    "- vs eager / vs compile (/ vs max-autotune: torch.compile(mode=\"max-autotune-no-cudagraphs\"), shown when measured): "
    "weighted geometric mean over shapes of the baseline's time over this subject's (side-by-side timings when "
    "the run had them, else the baseline report given alongside).",
    "- production S (data) = the data's own SOL_time_ms on the production device / the published production "
    "kernel time, averaged over shapes: the published figures, not measured here.", ""]


def render_markdown(subjects: list[Subject], picture: str | None) -> str:
    parts = ["# Benchmark table", ""]
    if picture:
        parts += [f"![per-operator S and roofline]({picture})", ""]
    max_autotune = _has_max_autotune(subjects)
    for subject in subjects:
        parts += _subject_section(subject, max_autotune)
    return "\n".join(parts + NOTES)


def render_svg(subjects: list[Subject]) -> str:
    width = 900
    ops: list[str] = []  # the first report's order of weight, then ops only later reports have
    for s in subjects:
        ops += [r.op for r in sorted(s.rows, key=lambda r: -r.weight) if r.op not in ops]
    series, columns = [], []
    for s in subjects:
        strict = s.role == "candidates"
        series.append(f"{s.label} ({'S' if strict else 'S_raw'})")
        columns.append({r.op: (r.s_op if strict else r.s_raw_op) for r in s.rows})
    bars = [Bar(op, tuple(col.get(op) for col in columns)) for op in ops]
    elements, height = bar_chart("Per-operator S (T_SOL / T, device time)", bars, series, "S", 0.0, width)
    points = [Point(x, y, i, t) for i, s in enumerate(subjects) for x, y, t in s.points]
    hw = subjects[0].hardware if subjects else {}
    peaks = {k: float(v) * 1e12 for k, v in (hw.get("peaks_tflops") or {}).items()
             if k in ("bf16_tc", "fp8_tc", "fp32")}
    more, extra = roofline_scatter(f"Roofline of every passing shape ({hw.get('display_name', '?')})", points,
                                   [s.label for s in subjects], float(hw.get("hbm_bandwidth_tbps", 1.0)) * 1e12,
                                   peaks, height, width)
    return document(elements + more, width, height + extra)


def write_paper(subjects: list[Subject], out_dir: Path, stem: str) -> tuple[Path, Path, Path]:
    """Write <stem>.json, <stem>.md and <stem>.svg into `out_dir` (created when missing)."""
    import json
    from dataclasses import asdict

    out_dir.mkdir(parents=True, exist_ok=True)
    svg_path, md_path, json_path = out_dir / f"{stem}.svg", out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    svg_path.write_text(render_svg(subjects))
    md_path.write_text(render_markdown(subjects, svg_path.name))
    json_path.write_text(json.dumps([asdict(s) for s in subjects], indent=1) + "\n")
    return json_path, md_path, svg_path
