"""Evaluate a candidate set (or a baseline) over a whole suite and score it."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.evaluate import CandidateSpec, EvalOptions, evaluate_candidate, resolve_device, resolve_profile, resolve_tier
from aka_tui.bench.hardware import HardwareProfile
from aka_tui.bench.problem import Problem, Suite
from aka_tui.bench.results import SCHEMA_VERSION, CandidateResult, ShapeResult, StageError
from aka_tui.bench.score import AggregateScore, OpScore, aggregate, score_op
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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION, "label": self.label, "suite_dir": self.suite_dir,
            "device": self.device, "tier": self.tier, "hardware": self.hardware.to_json(),
            "created_unix": self.created_unix, "wall_s": self.wall_s, "load_errors": self.load_errors,
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


def run_bench(suite: Suite, options: EvalOptions, baseline: str | None = None, candidates_dir: Path | None = None,
              ops: list[str] | None = None,
              progress: Callable[[str, str, ShapeResult | None], None] | None = None,
              checkpoint: Callable[[BenchReport], None] | None = None,
              precompile_workers: int = 0) -> BenchReport:
    """Evaluate every selected problem; missing candidates score 0 with status `no_candidate`."""
    if (baseline is None) == (candidates_dir is None):
        raise EvaluationError("give exactly one of --baseline eager|compile or --candidates DIR")
    if baseline not in (None, "eager", "compile"):
        raise EvaluationError(f"unknown baseline {baseline!r}: use eager or compile")
    if candidates_dir is not None and not candidates_dir.is_dir():
        raise EvaluationError(f"candidates directory {candidates_dir} does not exist")
    problems = list(suite.problems.values())
    if ops:
        unknown = [o for o in ops if o not in suite.problems]
        if unknown:
            raise EvaluationError(f"unknown problem(s) {', '.join(unknown)}; known: {', '.join(suite.problems)}")
        problems = [suite.problems[o] for o in ops]
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    tier = resolve_tier(options, device)
    started = time.time()
    if baseline == "compile" and precompile_workers > 0:
        from aka_tui.bench.precompile import precompile

        jobs = [(str(p.directory.resolve()), s.shape_id) for p in problems for s in p.shapes_for(tier)]
        precompile(jobs, device, precompile_workers,
                   progress=(lambda op, shape, err: progress(op, "precompiled", None)) if progress else None)
    results: list[CandidateResult] = []
    scores: list[OpScore] = []
    for problem in problems:
        shapes = problem.shapes_for(tier)
        if not shapes:
            continue
        if baseline is not None:
            spec: CandidateSpec | None = CandidateSpec(baseline)
        else:
            path = find_candidate(candidates_dir, problem)  # type: ignore[arg-type]
            spec = CandidateSpec.file(path) if path else None
        if progress:
            progress(problem.name, "start", None)
        if spec is None:
            error = StageError("compile", "no_candidate", f"no candidate for {problem.name} in {candidates_dir}")
            result = CandidateResult(problem.name, "none", False,
                                     [ShapeResult(s.shape_id, "no_candidate", [], error) for s in shapes], {}, error)
        else:
            result = evaluate_candidate(
                problem, spec, options,
                on_shape=(lambda r, p=problem.name: progress(p, "shape", r)) if progress else None)
        results.append(result)
        scores.append(score_op(problem, result, profile, launch_floor_s(profile)))
        if progress:
            progress(problem.name, "op_done", None)
            if checkpoint:
                checkpoint(BenchReport("partial", str(suite.directory), device, tier, profile, list(results),
                                       list(scores), aggregate(scores), round(time.time() - started, 1)))
    label = f"baseline:{baseline}" if baseline else f"candidates:{candidates_dir}"
    return BenchReport(label, str(suite.directory), device, tier, profile, results, scores, aggregate(scores),
                       round(time.time() - started, 1), {k: str(v) for k, v in suite.errors.items()})
