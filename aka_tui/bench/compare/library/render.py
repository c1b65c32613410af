"""A library comparison as text for the terminal, Markdown for the record, and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from aka_tui.bench.compare.library.results import DRY_RUN_NOTE, LibraryCompareReport


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def table_rows(report: LibraryCompareReport) -> list[list[str]]:
    rows = []
    for comp in report.comparisons:
        for r in comp.rows():
            met = "-" if r["met"] is None else ("met" if r["met"] else "not met")
            label = {"bar": "bar: ", "peer": "peer: "}.get(r["role"], "") + r["library"]
            target = "-" if r["target"] is None else f"{r['target']:.2f}"
            rows.append([r["op"], r["shape"], label, _fmt(r["ours_ms"]), _fmt(r["library_ms"]), _rate(r["ours_tflops"]),
                         _rate(r["library_tflops"]), _rate(r["ratio"]), _fmt(r["ours_e2e_ms"]),
                         _fmt(r["library_e2e_ms"]), _rate(r["e2e_ratio"]), target,
                         "dry-run" if report.dry_run else met, r["status"][:120]])
    return rows


HEADERS = ["op", "shape", "library", "ours ms", "lib ms", "ours TFLOP/s", "lib TFLOP/s", "ours/lib", "ours e2e ms",
           "lib e2e ms", "e2e ours/lib", "target", "met", "detail"]


def _header_lines(report: LibraryCompareReport, record: bool = False) -> list[str]:
    """The header; a skipped peer only in the record (`record`): the run has said so on stderr already."""
    lines = [f"library comparison on {report.device} ({report.device_name}), tier {report.tier}, {report.rounds} "
             f"interleaved rounds; torch {report.versions.get('torch')}, triton {report.versions.get('triton')}"]
    if report.dry_run:
        lines.append("NOTE: " + DRY_RUN_NOTE)
    lines.append("Throughput = the problem's FLOPs / median time, both sides at the same problem; fp8 with coarser "
                 "scales than block-wise is a throughput bar at the same M, N, K. ms: device time; e2e: max(host "
                 "time of one call, device time), per call as a loop without CUDA graphs sees it.")
    for name, peer in report.peers.items():
        if peer["available"]:
            lines.append(f"peer: {name} {peer['version']}")
        elif record:
            lines.append(f"peer: {name} skipped ({peer['reason']})")
    return lines


def _detail_lines(report: LibraryCompareReport) -> list[str]:
    lines = []
    for comp in report.comparisons:
        for side in comp.library:
            if side.ok:
                info = [f"{k}: {side.details[k]}" for k in ("strategy", "sdpa_backend", "form", "api", "layout", "note",
                                                            "mapping") if k in side.details]
                lines.append(f"{comp.op}:{comp.shape_id}: {side.label}" + (f" ({'; '.join(info)})" if info else ""))
            tried = side.details.get("alternatives", [])
            if len(tried) > 1:
                lines.append("  tried: " + "; ".join(
                    f"{a['label']}: " + (f"{a['quick_ms']:.4f} ms" if "quick_ms" in a else a["check"][:80])
                    + (f" [{a['sdpa_backend']}]" if "sdpa_backend" in a else "") for a in tried))
    if report.fp8_probe:
        lines.append("fp8 scaled_mm probe: " + "; ".join(f"{a['form']}: {'ok' if a['ok'] else a['reason']}"
                                                         for a in report.fp8_probe))
    for key, value in report.errors.items():
        lines.append(f"error: {key}: {value}")
    return lines


def _summary_lines(report: LibraryCompareReport) -> list[str]:
    def verdict(met: bool | None) -> str:
        return "dry-run" if report.dry_run else ("-" if met is None else ("met" if met else "NOT met"))

    lines = []
    for s in report.op_summary():
        parts = [f"{s['op']}: " + (f"target {s['target']:.2f}" if s["target"] is not None else "peers only, no target")]
        if s["largest_shape"]:
            parts.append(f"largest shape {s['largest_shape']} ratio {_fmt(s['largest_ratio'], 3)} "
                         f"({verdict(s['largest_met'])})")
        if s["weighted_geomean_ratio"] is not None:
            parts.append(f"weighted shapes geomean {_fmt(s['weighted_geomean_ratio'], 3)} "
                         f"({verdict(s['weighted_met'])})")
        lines.append("; ".join(parts))
    return lines


def render_text(report: LibraryCompareReport) -> str:
    from aka_tui.bench.scoring.report import text_table

    return "\n".join([*_header_lines(report), text_table(table_rows(report), HEADERS), *_summary_lines(report),
                      *_detail_lines(report)])


def render_markdown(report: LibraryCompareReport) -> str:
    out = ["# Library comparison: our kernels against the vendor and peer libraries", "", *(line + "  " for line in _header_lines(report, record=True)), ""]
    out.append("| " + " | ".join(HEADERS) + " |")
    out.append("|" + "---|" * len(HEADERS))
    out += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in table_rows(report)]
    out += ["", *(f"- {line}" for line in _summary_lines(report)), "", *(f"- {line}" for line in _detail_lines(report))]
    return "\n".join(out) + "\n"


def write_reports(report: LibraryCompareReport, out_dir: Path, stem: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    md_path.write_text(render_markdown(report))
    return json_path, md_path
