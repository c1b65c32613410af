"""The sweep's report: one JSON document (every configuration tried, with its errors), a compact table and
Markdown for the benchmark record. Sweeps run side by side (one `aka kb sweep` per GPU, each over some of the
ops) are merged into one report with

    python -m aka_tui.tuning.report OUT_DIR NAME PART.json [PART.json ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from aka_tui.bench.scoring.report import text_table
from aka_tui.errors import run_main
from aka_tui.secrets import scrub
from aka_tui.tuning import describe_changes, fmt_us
from aka_tui.tuning.trials import SWEEP_VERSION

HEADERS = ["op", "shape", "w", "bound", "default us", "best us", "speed-up", "TB/s def>best", "%BW def>best",
           "TFLOP/s def>best", "T_SOL/T def>best", "best config", "configs"]


def build_report(records: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    return {"version": SWEEP_VERSION, "kind": "aka-kb-sweep", **meta, "ops": records}


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _pair(default: dict[str, Any] | None, best: dict[str, Any] | None, key: str, fmt: str) -> str:
    a = _num(default.get(key) if default else None, fmt)
    b = _num(best.get(key) if best else None, fmt)
    return a if default is best or (default and best and default["index"] == best["index"]) else f"{a}>{b}"


def _counts(shape: dict[str, Any]) -> str:
    counts = shape.get("counts") or {}
    extra = [f"{counts[k]} {label}" for k, label in (("duplicate", "dup"), ("failed", "failed")) if counts.get(k)]
    return f"{counts.get('trials', 0)}" + (f" ({', '.join(extra)})" if extra else "")


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    rows = []
    for record in report["ops"]:
        trials = {t["index"]: t for t in record.get("trials", [])}
        if record.get("error") and not any(s.get("counts") for s in record.get("shapes", [])):
            rows.append([record["op"], "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                         f"error: {record['error'][:80]}", str(len(trials))])
            continue
        for shape in record.get("shapes", []):
            default = trials.get(shape.get("default_index"))
            best = trials.get(shape.get("best_index"))
            compute = shape.get("bound") == "compute"
            if best is None:
                failed = [t for t in trials.values() if t["shape_id"] == shape["shape_id"]]
                note = "no configuration passed" + (f": {failed[0].get('error') or failed[0]['status']}"[:90]
                                                    if failed else "")
            else:
                note = describe_changes(best["changed"])
            speedup = shape.get("speedup")
            rows.append([
                record["op"], shape["shape_id"], _num(shape.get("weight"), ".2f"), shape.get("bound") or "-",
                fmt_us(default.get("median_ms") if default else None), fmt_us(best.get("median_ms") if best else None),
                "-" if speedup is None else f"{speedup:.2f}x",
                _pair(default, best, "tbps", ".3g"), _pair(default, best, "bw_pct", ".0f"),
                _pair(default, best, "tflops", ".4g") if compute else "-",
                _pair(default, best, "sol_ratio", ".3f"), note, _counts(shape)])
    return rows


def summary_lines(report: dict[str, Any]) -> list[str]:
    """Recommended TUNABLES per op, binding warnings, failed configurations (the first few), op errors."""
    lines = []
    for record in report["ops"]:
        op = record["op"]
        if record.get("error"):
            lines.append(f"{op}: ERROR {record['error']}")
        rec = record.get("recommended")
        shapes = record.get("shapes", [])
        if rec:
            if rec["changed"]:
                per = ", ".join(f"{sid} {v:.2f}x" for sid, v in rec["per_shape_speedup"].items())
                lines.append(f"{op}: recommended TUNABLES {describe_changes(rec['changed'])} -> "
                             f"{rec['weighted_speedup']:.2f}x over the default ({rec['basis']}; {per}); full dict: "
                             f"{json.dumps(rec['config'])}")
            else:
                lines.append(f"{op}: keep the default TUNABLES (nothing beats it beyond the measured spread on "
                             f"{len(shapes)} shape{'s' if len(shapes) != 1 else ''})")
        for warning in record.get("binding_warnings", []):
            lines.append(f"{op}: WARNING {warning}")
        failed = [t for t in record.get("trials", []) if t["status"] not in ("passed", "ok", "duplicate")]
        for t in failed[:3]:
            lines.append(f"{op}: #{t['index']} {t['shape_id']} {describe_changes(t['changed'])}: {t['status']}: "
                         f"{(t.get('error') or '')[:160]}")
        if len(failed) > 3:
            lines.append(f"{op}: ... {len(failed) - 3} more failed configurations in the JSON")
    return lines


def render_text(report: dict[str, Any]) -> str:
    head = (f"aka kb sweep on {report.get('device_name', '?')} (profile {report.get('hardware_profile', {}).get('name', '?')}, "
            f"{report.get('hardware_profile', {}).get('hbm_bandwidth_tbps', '?')} TB/s), tier {report.get('tier')}, "
            f"{report.get('strategy')}, max {report.get('max_configs')} configs per shape")
    out = [head, text_table(table_rows(report), HEADERS), *summary_lines(report)]
    if not str(report.get("device", "")).startswith("cuda"):
        out.append("note: CPU interpreter timings prove the sweep works; they say nothing about a GPU")
    return "\n".join(out)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render_markdown(report: dict[str, Any]) -> str:
    profile = report.get("hardware_profile", {})
    lines = [
        f"## aka kb sweep: {', '.join(r['op'] for r in report['ops'])}", "",
        f"- date: {report.get('created', '?')}; device: {report.get('device_name', '?')} ({report.get('device')}); "
        f"profile {profile.get('name', '?')} ({profile.get('hbm_bandwidth_tbps', '?')} TB/s HBM)",
        f"- command: `{report.get('command', '')}`",
        f"- tier {report.get('tier')}, strategy {report.get('strategy')}, at most {report.get('max_configs')} "
        f"configurations per shape, seed {report.get('seed')}; versions {report.get('versions', {})}",
        "- a tuning aid, not a score: one correctness check per configuration and shape, the evaluator's timer; "
        "T_SOL/T is S-like only (S comes from `aka eval` / `aka bench`)", "",
        _md_row(HEADERS), "|" + "---|" * len(HEADERS),
        *(_md_row(row) for row in table_rows(report)), "",
        *(f"- {line}" for line in summary_lines(report)), "",
    ]
    for record in report["ops"]:
        trials = record.get("trials", [])
        if not trials:
            continue
        lines += [f"<details><summary>{record['op']}: {len(trials)} trials</summary>", "",
                  _md_row(["#", "shape", "phase", "config (changes)", "status", "us", "p20-p80 us", "TB/s", "%BW",
                           "T_SOL/T", "note"]), "|" + "---|" * 11]
        ordered = sorted(trials, key=lambda t: (t["shape_id"], t.get("median_ms") is None, t.get("median_ms") or 0))
        for t in ordered:
            band = (f"{fmt_us(t.get('p20_ms'))}-{fmt_us(t.get('p80_ms'))}" if t.get("p20_ms") is not None else "-")
            note = t.get("error") or (f"same launches as #{t['duplicate_of']}" if t.get("duplicate_of") is not None else "")
            lines.append(_md_row([str(t["index"]), t["shape_id"], t["phase"], describe_changes(t["changed"]),
                                  t["status"], fmt_us(t.get("median_ms")), band, _num(t.get("tbps"), ".3g"),
                                  _num(t.get("bw_pct"), ".0f"), _num(t.get("sol_ratio"), ".3f"), (note or "")[:160]]))
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def default_name(ops: list[str], tier: str) -> str:
    joined = "-".join(ops) if len(ops) <= 3 else f"{len(ops)}ops"
    return f"sweep-{joined}-{tier}"


def write_report(report: dict[str, Any], out_dir: str | Path, name: str) -> tuple[Path, Path]:
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    json_path, md_path = directory / f"{name}.json", directory / f"{name}.md"
    json_path.write_text(scrub(json.dumps(report, indent=1, default=str)) + "\n")
    md_path.write_text(scrub(render_markdown(report)) + "\n")
    return json_path, md_path


def merge_reports(paths: list[str | Path]) -> dict[str, Any]:
    """Several sweep reports (e.g. one per GPU) as one: the first report's header, every op in order."""
    reports = [json.loads(Path(p).read_text()) for p in paths]
    if not reports:
        raise ValueError("no reports to merge")
    merged = dict(reports[0])
    merged["ops"] = [record for report in reports for record in report.get("ops", [])]
    merged["merged_from"] = [str(p) for p in paths]
    merged["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return merged


def main(argv: list[str]) -> int:
    """Merge the sweep reports `argv[2:]` into `argv[0]/argv[1].{json,md}` and print the merged table."""
    from aka_tui.tuning import SweepError

    if len(argv) < 3:
        print("usage: python -m aka_tui.tuning.report OUT_DIR NAME PART.json [PART.json ...]", file=sys.stderr)
        return 2
    try:
        report = merge_reports(sorted(argv[2:]))
    except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
        raise SweepError(f"cannot read a sweep report: {exc}") from None
    write_report(report, argv[0], argv[1])
    print(render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
