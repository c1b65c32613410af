"""The correctness illusion, measured: pass rates under a naive check, the hardened check, and real kernels.

Naive = what many harnesses stop at: one shape, one input, `allclose(atol=rtol=1e-2)`, no poisoning, no
fuzzing, no attribution, no tamper checks. Hardened = the full evaluator. Real = hardened and the kernel is
the candidate's own. The gaps between the three rates are the illusion.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from aka_tui.bench.evaluator.evaluate import (
    CandidateSpec,
    EvalOptions,
    evaluate_candidate,
    resolve_device,
    resolve_tier,
)
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.problem.model import Suite
from aka_tui.errors import EvaluationError


@dataclass(frozen=True)
class IllusionRow:
    op: str
    candidate: str
    naive_pass: bool
    hardened_pass: bool
    real: bool
    why: str


@dataclass(frozen=True)
class IllusionReport:
    rows: list[IllusionRow]

    def rate(self, attr: str) -> float:
        return sum(getattr(r, attr) for r in self.rows) / len(self.rows) if self.rows else 0.0


def collect_candidates(directory: Path, suite: Suite) -> list[tuple[str, Path]]:
    """(op, file) for DIR/<op>.py and every DIR/<op>/*.py whose op is in the suite."""
    found: list[tuple[str, Path]] = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix == ".py" and path.stem in suite.problems:
            found.append((path.stem, path))
        elif path.is_dir() and path.name in suite.problems:
            found += [(path.name, p) for p in sorted(path.glob("*.py"))]
    return found


def _passed(result: CandidateResult) -> bool:
    return result.compiled and bool(result.shapes) and all(s.status in ("passed", "skipped") for s in result.shapes)


def _why(result: CandidateResult) -> str:
    for shape in result.shapes:
        if shape.error and shape.status != "skipped":
            return f"{shape.status}: {shape.error.message}"[:140]
    for shape in result.shapes:
        if shape.audit and not shape.audit.real:
            return f"fallback: {shape.audit.reason}"[:140]
    return ""


def run_illusion(suite: Suite, directory: Path, options: EvalOptions,
                 progress: Callable[[str, str], None] | None = None) -> IllusionReport:
    """Evaluate every candidate twice: the naive check, then the hardened evaluator."""
    if not directory.is_dir():
        raise EvaluationError(f"candidates directory {directory} does not exist")
    candidates = collect_candidates(directory, suite)
    if not candidates:
        raise EvaluationError(f"no candidates in {directory} (expected <op>.py or <op>/*.py for ops of the suite)")
    tier = resolve_tier(options, resolve_device(options.device))
    rows = []
    for op, path in candidates:
        problem = suite.problems[op]
        if progress:
            progress(op, path.name)
        first_shape = problem.shapes_for(tier)[0].shape_id
        spec = CandidateSpec.file(path)
        naive = evaluate_candidate(problem, spec, replace(options, hardening=False, cases=1, timing=False,
                                                          shape_ids=[first_shape], fuzz=0))
        hardened = evaluate_candidate(problem, spec, options)
        hardened_pass = _passed(hardened)
        real = hardened_pass and all(s.audit is not None and s.audit.real for s in hardened.shapes if not s.fuzz)
        rows.append(IllusionRow(op, path.name, _passed(naive), hardened_pass, real, "" if real else _why(hardened)))
    return IllusionReport(rows)


def render_illusion(report: IllusionReport) -> str:
    lines = [f"{'op':28s} {'candidate':32s} naive  hardened  real   why not", "-" * 110]
    for r in report.rows:
        mark = lambda ok: "pass " if ok else "FAIL "  # noqa: E731
        lines.append(f"{r.op:28s} {r.candidate:32s} {mark(r.naive_pass)}  {mark(r.hardened_pass)}     "
                     f"{'yes' if r.real else 'no '}   {r.why}")
    lines.append(f"pass rate over {len(report.rows)} candidates: naive {report.rate('naive_pass'):.0%}, "
                 f"hardened {report.rate('hardened_pass'):.0%}, real kernels {report.rate('real'):.0%}")
    return "\n".join(lines)
