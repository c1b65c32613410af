"""The weights a suite run used, written into its report: operator importance (raw and normalised over
the operators evaluated) and how each operator's shapes were weighted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka_tui.bench.problem.model import Problem


def _shape_weighting(problem: Problem, tier: str | None) -> str:
    shapes = problem.shapes_for(tier)
    weights = [s.weight for s in shapes]
    if not weights or max(weights) - min(weights) <= 1e-12 * max(weights):
        return "uniform"
    return "per-shape weights from shapes.json"


def weight_summary(problems: list[Problem], suite_dir: Path, tier: str | None) -> dict[str, Any]:
    """{ops: {name: importance, normalised, source, shapes}, total_importance, listed_without_directory}."""
    from aka_tui.bench.problem.atrex import importance_listing

    total = sum(p.importance for p in problems)
    ops = {
        p.name: {
            "importance": p.importance,
            "normalised": (p.importance / total) if total > 0 else (1.0 / len(problems)),
            "source": p.importance_provenance or "problem.json",
            "shapes": _shape_weighting(p, tier),
        }
        for p in problems
    }
    listed = importance_listing(suite_dir)
    return {
        "ops": ops,
        "total_importance": total,
        "normalised_over": "the operators evaluated in this run" if total > 0 else "none (uniform: no importance)",
        "importance_file_total": sum(listed.values()) if listed else None,
        "listed_without_directory": sorted(set(listed) - {p.name for p in problems} - _present(suite_dir)),
        "listed_not_evaluated": sorted((set(listed) & _present(suite_dir)) - {p.name for p in problems}),
    }


def merged_weights(summaries: list[dict[str, Any]], ops: list[str]) -> dict[str, Any]:
    """Weights of merged partial reports: each op's entry from the first report that has it, renormalised."""
    merged = dict(summaries[0])
    entries: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        for name, entry in (summary.get("ops") or {}).items():
            entries.setdefault(name, dict(entry))
    kept = {name: entries[name] for name in ops if name in entries}
    total = sum(e["importance"] for e in kept.values())
    for entry in kept.values():
        entry["normalised"] = entry["importance"] / total if total > 0 else 1.0 / len(kept)
    merged["ops"], merged["total_importance"] = kept, total
    return merged


def _present(suite_dir: Path) -> set[str]:
    try:
        return {child.name for child in suite_dir.iterdir() if child.is_dir()}
    except OSError:
        return set()


def render_weights(summary: dict[str, Any]) -> list[str]:
    """Markdown lines describing the weights."""
    if not summary:
        return []
    lines = ["## Weights", "",
             f"- operator weights: importance normalised over {summary['normalised_over']} "
             f"(Σ importance evaluated = {summary['total_importance']:.4f}"
             + (f"; the importance file sums to {summary['importance_file_total']:.4f}"
                if summary.get("importance_file_total") else "") + ")"]
    missing = summary.get("listed_without_directory") or []
    if missing:
        lines.append(f"- listed in the importance file without a directory here ({len(missing)}): {', '.join(missing)}")
    lines += ["", "| op | importance | normalised | source | shape weights |", "|---|---|---|---|---|"]
    for name, op in sorted(summary["ops"].items(), key=lambda kv: -kv[1]["normalised"]):
        lines.append(f"| {name} | {op['importance']:.6g} | {op['normalised']:.4f} | {op['source']} | {op['shapes']} |")
    return lines + [""]
