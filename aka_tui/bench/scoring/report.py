"""Human-readable tables of scores: plain text for the terminal, Markdown for the benchmark record."""

from __future__ import annotations

import json
import time
from pathlib import Path

from aka_tui.bench.measure.gpu_clocks import clocks_line
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.scoring.bench_report import BenchReport
from aka_tui.bench.scoring.score import AggregateScore, OpScore
from aka_tui.secrets import scrub


def _f(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def _status_summary(result: CandidateResult) -> str:
    failed = [s for s in result.shapes if not s.passed]
    if not result.shapes:
        return "no shapes"
    if not failed:
        return "ok"
    first = failed[0]
    reason = first.error.message if first.error else first.status
    return f"{first.status}: {reason}"[:90]


HEADERS = ["op", "w%", "pass", "kernel", "S_op", "S_raw", "S_e2e_raw", "S_launch", "vs eager", "status"]
# Speed-up columns shown only when some shape of the report had that baseline timed beside it:
# (header, OpScore attribute, ShapeResult timing field)
OPTIONAL_SPEEDUPS = [("vs compile", "speedup_vs_compile", "compile_timing"),
                     ("vs max-autotune", "speedup_vs_compile_max", "compile_max_timing")]


def _optional_speedups(report: BenchReport) -> list[tuple[str, str, str]]:
    return [column for column in OPTIONAL_SPEEDUPS
            if any(getattr(s, column[2]) is not None for r in report.results for s in r.shapes)]


def op_headers(report: BenchReport) -> list[str]:
    """HEADERS with the speed-up columns of the baselines this report timed (`--compare-compile...`)."""
    return HEADERS[:-1] + [header for header, _, _ in _optional_speedups(report)] + HEADERS[-1:]


def op_rows(report: BenchReport) -> list[list[str]]:
    """One row per op, in the order of `op_headers(report)`."""
    optional = _optional_speedups(report)
    rows = []
    for op, result in zip(report.ops, report.results):
        passed = sum(s.passed for s in result.shapes)
        rows.append([
            op.problem, f"{op.weight * 100:.1f}", f"{passed}/{len(result.shapes)}",
            "real" if op.real else ("fallback" if op.correct else "-"), _f(op.s_op), _f(op.s_raw_op),
            _f(op.s_e2e_raw_op), _f(op.s_launch_op), _f(op.speedup_vs_eager, 2),
            *(_speedup_cell(op, attr) for _, attr, _ in optional), _status_summary(result),
        ])
    return rows


def speedup_note(report: BenchReport) -> str:
    """What the speed-up columns of this report mean ("" when it has none)."""
    columns = " / ".join(header for header, _, _ in _optional_speedups(report))
    return (f"{columns}: geometric mean over the op's timed shapes under the shape weights; (min x): its slowest "
            "shape against that baseline, shapes of weight 0 included") if columns else ""


def _speedup_cell(op: OpScore, attr: str) -> str:
    """The op's weighted speed-up, and its worst shape's when that one is lower (a decode shape of weight 0
    can lose without moving the weighted figure)."""
    value = getattr(op, attr)
    shapes = [v for v in (getattr(s, attr) for s in op.shapes) if v is not None]
    worst = min(shapes) if shapes else None
    if value is None or worst is None or worst >= value - 0.005:
        return _f(value, 2)
    return f"{_f(value, 2)} (min {_f(worst, 2)})"


def text_table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def aggregate_lines(agg: AggregateScore) -> list[str]:
    return [
        f"S_agg = {agg.s_agg:.4f} (normalised)   raw-weight form = {agg.s_agg_raw_weight:.4f}   "
        f"S_raw_agg = {agg.s_raw_agg:.4f}   launch-aware = {agg.s_launch_agg:.4f}",
        f"end to end (host issue time included): S_e2e_agg = {agg.s_e2e_agg:.4f}   "
        f"S_e2e_raw_agg = {agg.s_e2e_raw_agg:.4f}",
        f"pass rates over {agg.ops} ops: compiled {agg.compiled_rate:.0%}, correct {agg.correct_rate:.0%}, "
        f"correct-and-real {agg.correct_and_real_rate:.0%}",
        f"fast_1 vs eager = {_f(agg.fast_1_vs_eager, 2)}   fast_1 vs torch.compile = {_f(agg.fast_1_vs_compile, 2)}"
        + (f"   fast_1 vs torch.compile max-autotune = {_f(agg.fast_1_vs_compile_max, 2)}"
           if agg.fast_1_vs_compile_max is not None else ""),
    ]


MIXED_NOTE = ("note: GPUs of several models measured this run ({}); each op's S uses the profile of the GPU "
              "that measured it (provenance.hardware_profile), so S_agg mixes them")


def wall_time_text(wall_s: float, merged_from: list[dict] | None) -> str:
    """"12.3 s", or for a merged report the sum and its parts: "300.0 s in 3 merged reports (100.0 + …)"."""
    if not merged_from:
        return f"{wall_s:.1f} s"
    parts = " + ".join(f"{float(m.get('wall_s', 0)):.1f}" for m in merged_from)
    return f"{wall_s:.1f} s in {len(merged_from)} merged reports ({parts})"


def _utc(unix: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(unix)) if unix else "?"


def render_text(report: BenchReport) -> str:
    head = (f"{report.label} on {report.device} ({report.hardware.display_name}, profile {report.hardware.name}), "
            f"tier {report.tier}, {wall_time_text(report.wall_s, report.merged_from)}")
    parts = [head, text_table(op_rows(report), op_headers(report)), *aggregate_lines(report.aggregate)]
    note = speedup_note(report)
    if note:
        parts.insert(2, note)
    held = [f"{o.problem}:{h}" for o in report.ops for h in o.holds]
    if held:
        parts.append("held, S = 0 until a person accepts (--accept KIND=OP[:SHAPE] --accept-reason TEXT): "
                     + ", ".join(held))
    if report.mixed_hardware:
        parts.append(MIXED_NOTE.format(", ".join(report.mixed_hardware)))
    if not report.hardware.representative:
        parts.append("note: CPU interpreter timings are not representative of any GPU; S values here only test the pipeline")
    for name, error in report.load_errors.items():
        parts.append(f"skipped problem {name}: {error}")
    return "\n".join(parts)


def shape_rows(op: OpScore) -> list[list[str]]:
    return [[op.problem, s.shape_id, "pass" if s.passed else "FAIL", "real" if s.real else "fallback",
             _f(s.t_sol_ms, 4), _f(s.time_ms, 4), _f(s.time_e2e_ms, 4), _f(s.s, 3), _f(s.s_raw, 3),
             _f(s.s_e2e_raw, 3), s.bottleneck or "-"]
            for s in op.shapes]


def markdown_table(rows: list[list[str]], headers: list[str]) -> str:
    """A Markdown table (a `|` inside a cell is escaped)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def render_markdown(report: BenchReport) -> str:
    md = markdown_table
    parts = [f"# {report.label}", "",
             f"- device: {report.device} ({report.hardware.display_name}); roofline profile `{report.hardware.name}`",
             f"- tier: {report.tier}; wall time {wall_time_text(report.wall_s, report.merged_from)}", ""]
    if report.merged_from:
        parts[-1:-1] = [f"- merged: {m['label']} (created {_utc(m.get('created_unix'))}, {float(m['wall_s']):.1f} s) "
                        f"gave {', '.join(m['ops'])}" for m in report.merged_from]
    if report.mixed_hardware:
        parts[-1:-1] = ["- " + MIXED_NOTE.format(", ".join(report.mixed_hardware))]
    clocks = clocks_line(report.gpu_clocks)
    if clocks:
        parts[-1:-1] = [clocks]
    parts += ["## Per op", "", md(op_rows(report), op_headers(report)), ""]
    note = speedup_note(report)
    if note:
        parts += [f"- {note}", ""]
    parts += ["## Aggregate", ""] + [f"- {line}" for line in aggregate_lines(report.aggregate)] + [""]
    shape_headers = ["op", "shape", "correct", "kernel", "T_SOL ms", "T ms", "T_e2e ms", "S", "S_raw", "S_e2e_raw",
                     "bound"]
    from aka_tui.bench.scoring.weights import render_weights

    parts += render_weights(report.weights)
    parts += ["## Per shape", "", md([r for o in report.ops for r in shape_rows(o)], shape_headers), ""]
    return "\n".join(parts)


def write_reports(report: BenchReport, out_dir: Path, stem: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{stem}.json"
    md_path = out_dir / f"{stem}.md"
    json_path.write_text(scrub(json.dumps(report.to_json(), indent=1)) + "\n")
    md_path.write_text(scrub(render_markdown(report)))
    return json_path, md_path
