"""A scored suite run (`aka bench`'s report): its record, rescoring a stored one, merging partial ones (whole ops,
or the parts of one op's shapes)."""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.bench.measure.results import SCHEMA_VERSION, CandidateResult
from aka_tui.bench.problem.model import Problem, Suite
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.score import AggregateScore, OpScore, aggregate, score_op
from aka_tui.errors import EvaluationError


@dataclass
class BenchReport:
    """A scored suite run (what `aka bench` writes as JSON and Markdown)."""

    label: str
    suite_dir: str
    device: str
    tier: str
    hardware: HardwareProfile
    results: list[CandidateResult]
    ops: list[OpScore]
    aggregate: AggregateScore
    wall_s: float
    load_errors: dict[str, str] = field(default_factory=dict)
    created_unix: float = field(default_factory=time.time)
    executor: str = "local"
    slots: list[dict[str, Any]] = field(default_factory=list)
    mixed_hardware: list[str] = field(default_factory=list)  # profile names when GPUs of several models ran
    weights: dict[str, Any] = field(default_factory=dict)  # suite_weights.weight_summary of the ops evaluated
    # Partial reports this one merges (`merge_reports`): label, wall_s and ops of each that gave an op.
    merged_from: list[dict[str, Any]] = field(default_factory=list)
    # The GPU's clocks while it ran (gpu_clocks.clocks_record): empty without nvidia-smi or for merged reports.
    gpu_clocks: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION, "label": self.label, "suite_dir": self.suite_dir,
            "device": self.device, "tier": self.tier, "hardware": self.hardware.to_json(),
            "created_unix": self.created_unix, "wall_s": self.wall_s, "load_errors": self.load_errors,
            "executor": self.executor, "slots": self.slots, "mixed_hardware": self.mixed_hardware,
            "weights": self.weights, **({"merged_from": self.merged_from} if self.merged_from else {}),
            **({"gpu_clocks": self.gpu_clocks} if self.gpu_clocks else {}),
            "aggregate": asdict(self.aggregate), "ops": [asdict(o) for o in self.ops],
            "results": [r.to_json() for r in self.results],
        }


def find_candidate(candidates_dir: Path, problem: Problem) -> Path | None:
    """`DIR/<op>.py`, else the first `DIR/<op>/*.py`, else `DIR/<group>/<op>.py` (e.g. `kb/family`)."""
    direct = candidates_dir / f"{problem.name}.py"
    if direct.is_file():
        return direct
    folder = candidates_dir / problem.name
    if folder.is_dir():
        files = sorted(folder.glob("*.py"))
        return files[0] if files else None
    nested = sorted(candidates_dir.glob(f"*/{problem.name}.py"))
    return nested[0] if nested else None


def launch_floor_s(profile: HardwareProfile) -> float | None:
    return profile.empty_launch_us / 1e6 if profile.empty_launch_us else None


def rescore_report(data: dict[str, Any], suite: Suite, label_suffix: str = "rescored") -> BenchReport:
    """Score a stored report's measured results again with the suite's current weights (nothing re-run).

    Used when weights change (e.g. after `aka trace apply`): times, verdicts and rooflines stay those the
    report measured; ops missing from the suite are dropped, with their names in `load_errors`.
    """
    from aka_tui.bench.roofline.hardware import profile_from_json

    try:
        profile = profile_from_json(data["hardware"], Path("<report>"))
        results = [CandidateResult.from_json(r) for r in data["results"]]
    except (KeyError, TypeError) as exc:
        raise EvaluationError(f"not an aka bench report ({exc!r}): need hardware and results") from None
    kept = [r for r in results if r.problem in suite.problems]
    dropped = {r.problem: "not in the suite" for r in results if r.problem not in suite.problems}
    scores = [score_op(suite.problems[r.problem], r, profile, launch_floor_s(profile)) for r in kept]
    from aka_tui.bench.scoring.weights import weight_summary

    return BenchReport(f"{data.get('label', '?')} ({label_suffix})", str(suite.directory), str(data.get("device")),
                       str(data.get("tier")), profile, kept, scores, aggregate(scores), float(data.get("wall_s", 0)),
                       dropped, executor=str(data.get("executor", "local")), slots=list(data.get("slots", [])),
                       weights=weight_summary([suite.problems[r.problem] for r in kept], suite.directory,
                                              str(data.get("tier"))),
                       merged_from=list(data.get("merged_from", [])),
                       created_unix=float(data.get("created_unix") or time.time()),
                       gpu_clocks=dict(data.get("gpu_clocks") or {}))


def _unmeasured(result: CandidateResult) -> bool:
    """The report had no candidate for this op (e.g. a sessions score over a subset of the ops)."""
    return bool(result.shapes) and all(s.status == "no_candidate" for s in result.shapes)


def merge_reports(reports: list[BenchReport]) -> BenchReport:
    """Partial reports of one suite as one: the first report that measured an op wins it (an op a report
    has no candidate for is taken from a later report that has one); the aggregate is recomputed.

    With several reports the merged one says where each op came from (`merged_from`), its wall time is the sum
    of the contributing reports' (they ran one after another), and its label names each distinct source."""
    merged = reports[0]
    origin = {r.problem: 0 for r in merged.results}
    for k, extra in enumerate(reports[1:], start=1):
        index = {r.problem: i for i, r in enumerate(merged.results)}
        for result, score in zip(extra.results, extra.ops):
            i = index.get(result.problem)
            if i is None:
                merged.results.append(result)
                merged.ops.append(score)
                origin[result.problem] = k
            elif _unmeasured(merged.results[i]) and not _unmeasured(result):
                merged.results[i] = result
                merged.ops[i] = score
                origin[result.problem] = k
    if len(reports) > 1:
        sources = [{"label": r.label, "wall_s": r.wall_s, "created_unix": r.created_unix,
                    "ops": [o for o, k2 in origin.items() if k2 == k],
                    **({"gpu_clocks": r.gpu_clocks} if r.gpu_clocks else {})} for k, r in enumerate(reports)]
        merged.merged_from = [src for src in sources if src["ops"]]
        merged.wall_s = sum(src["wall_s"] for src in merged.merged_from)
        labels = list(dict.fromkeys(src["label"] for src in merged.merged_from))
        merged.label = labels[0] if len(labels) == 1 else " + ".join(labels)
        merged.gpu_clocks = {}  # each source's clocks stay with it in merged_from
    merged.aggregate = aggregate(merged.ops)
    if merged.weights:
        from aka_tui.bench.scoring.weights import merged_weights

        merged.weights = merged_weights([r.weights for r in reports], [o.problem for o in merged.ops])
    return merged


def merge_shape_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Stored reports that each measured part of an op's shapes, as one stored report (rescore it to score it).

    Unlike `merge_reports`, where the first report that measured an op keeps it whole, an op here gets the shapes
    of every part: each part ran a suite copy holding some of its shapes (`aka_tui.executors.shape_split`), so
    no part measured the op alone. The parts ran side by side: the wall time is the longest part's.
    """
    if not parts:
        raise EvaluationError("no part report to merge")
    merged = copy.deepcopy(parts[0])
    by_op = {r["problem"]: r for r in merged["results"]}
    for extra in parts[1:]:
        for result in extra["results"]:
            if result["problem"] in by_op:
                by_op[result["problem"]]["shapes"].extend(copy.deepcopy(result["shapes"]))
            else:
                by_op[result["problem"]] = copy.deepcopy(result)
                merged["results"].append(by_op[result["problem"]])
    merged["wall_s"] = max(float(p.get("wall_s", 0)) for p in parts)
    return merged
