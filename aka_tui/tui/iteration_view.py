"""What the Session and Replay screens show for one iteration: verdict, scores, per-shape metrics, diff.

Built from the recorded files of a session (kernel, evaluator result, proposal) and the loop's events, so a
live session and a replayed one render through the same code.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.record.history import IterationFacts, facts_from_events, recorded_iterations
from aka_tui.tui.decision import Margins, Recorded, explain

__all__ = ["IterationFacts", "IterationView", "ShapeMetrics", "build_views", "facts_from_events", "make_view",
           "recorded_iterations", "shape_metrics"]


@dataclass(frozen=True)
class ShapeMetrics:
    """One shape of one candidate, with the roofline quantities a kernel engineer reads."""

    shape_id: str
    status: str
    time_ms: float | None
    t_sol_ms: float | None
    s: float
    s_raw: float
    bottleneck: str | None
    flops: float | None
    bytes_total: float | None
    own_share: float | None
    real: bool
    foreign: dict[str, int] = field(default_factory=dict)
    error: str = ""
    p20_ms: float | None = None  # spread of the timed calls (rotating input sets, L2 flushed before each)
    p80_ms: float | None = None
    reps: int | None = None
    kernel_resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # GPU only (compiled kernels)

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity in FLOP per byte."""
        return self.flops / self.bytes_total if self.flops and self.bytes_total else None

    @property
    def achieved_gbps(self) -> float | None:
        return self.bytes_total / (self.time_ms * 1e-3) / 1e9 if self.bytes_total and self.time_ms else None

    @property
    def achieved_tflops(self) -> float | None:
        return self.flops / (self.time_ms * 1e-3) / 1e12 if self.flops and self.time_ms else None

    def copy_pct(self, copy_gbps: float | None) -> float | None:
        """Achieved bandwidth as a percentage of the calibrated copy bandwidth (None when not calibrated)."""
        achieved = self.achieved_gbps
        return achieved / copy_gbps * 100.0 if achieved and copy_gbps else None

    @property
    def roofline_pct(self) -> float:
        """S_raw as a percentage of the roofline (a fallback still shows how fast it ran)."""
        return self.s_raw * 100.0


@dataclass(frozen=True)
class IterationView:
    """One recorded candidate."""

    iteration: int
    author: str
    accepted: bool
    s_op: float
    s_raw_op: float
    correct: bool
    real: bool
    delta: float  # S_op minus the incumbent's S_op before this iteration
    rationale: str
    kernel: str
    incumbent_kernel: str
    sha: str | None
    tags: tuple[str, ...]
    shapes: list[ShapeMetrics]
    error: str = ""
    static_findings: tuple[str, ...] = ()
    incumbent_s_op: float | None = None  # the incumbent's S_op this candidate was measured against
    screened_out: bool = False
    reason: str = ""  # why it was accepted or rejected, short (the iteration list's column)
    decision: tuple[str, ...] = ()  # the same, in full, with the re-measured samples (the Decision tab)
    proposal: dict[str, Any] = field(default_factory=dict)  # proposal.json without the transcript
    device: str = ""  # where it was measured (result provenance): "cpu" is the Triton interpreter

    @property
    def delta_text(self) -> str:
        """S_op against the incumbent it was measured against, in percent ("new" without one)."""
        if not self.incumbent_s_op:
            return "new"
        return f"{(self.s_op / self.incumbent_s_op - 1.0) * 100:+.0f}%"

    @property
    def path(self) -> str:
        """Which path produced the candidate (a knowledge-base kernel, a transfer, a compiler seed, the model, a
        person), as the session recorded it."""
        return str(self.proposal.get("path") or self.proposal.get("proposer") or "")

    @property
    def by_person(self) -> bool:
        return self.author not in ("", "aka agent")

    @property
    def verdict(self) -> str:
        if self.accepted:
            return "adopted" if self.by_person else "accepted"
        if not self.correct:
            return "incorrect"
        if not self.real:
            return "fallback"
        return "screened" if self.screened_out else "rejected"

    def diff(self) -> str:
        """Unified diff of the kernel against the incumbent it was measured against."""
        if not self.incumbent_kernel:
            return "(no incumbent yet: this is the first candidate)"
        lines = difflib.unified_diff(self.incumbent_kernel.splitlines(), self.kernel.splitlines(),
                                     "incumbent", f"iteration {self.iteration}", lineterm="")
        return "\n".join(lines) or "(identical to the incumbent)"


def shape_metrics(problem: Any, profile: Any, result_json: dict[str, Any]) -> tuple[Any, list[ShapeMetrics]]:
    """(OpScore, metrics per scored shape) of one evaluator record on a profile."""
    from aka_tui.bench.measure.results import CandidateResult
    from aka_tui.bench.scoring.score import score_op

    result = CandidateResult.from_json(result_json)
    op = score_op(problem, result, profile)
    by_id = {r.shape_id: r for r in result.shapes}
    metrics = []
    for s in op.shapes:
        shape_result = by_id[s.shape_id]
        roof = problem.roofline.get(s.shape_id)
        if roof is None and shape_result.roofline:
            from aka_tui.bench.problem.model import RooflineEntry

            roof = RooflineEntry.from_json(shape_result.roofline)
        audit = shape_result.audit
        foreign = dict(audit.foreign_kernels or audit.compute_ops) if audit else {}
        error = shape_result.error.message if shape_result.error else (audit.reason if audit and not audit.real else "")
        timing = shape_result.timing
        metrics.append(ShapeMetrics(s.shape_id, shape_result.status, s.time_ms, s.t_sol_ms, s.s, s.s_raw,
                                    s.bottleneck, roof.flops if roof else None, roof.bytes_total if roof else None,
                                    audit.own_share if audit else None, s.real, foreign, error,
                                    timing.p20_ms if timing else None, timing.p80_ms if timing else None,
                                    timing.reps if timing else None,
                                    dict(audit.kernel_resources) if audit else {}))
    return op, metrics


def build_views(session_dir: Path, problem: Any, profile: Any) -> tuple[list[IterationView], list[str]]:
    """Every recorded iteration of a session as views, plus problems met while reading (never fatal)."""
    facts, problems = facts_from_events(session_dir)
    views: list[IterationView] = []
    incumbent: IterationView | None = None
    for iteration in recorded_iterations(session_dir):
        folder = session_dir / "iterations" / f"{iteration:04d}"
        try:
            kernel = (folder / "kernel.py").read_text()
            result = json.loads((folder / "result.json").read_text())
            proposal = json.loads((folder / "proposal.json").read_text())
            view = make_view(problem, profile, iteration, kernel, result, proposal,
                             facts.get(iteration, IterationFacts()), incumbent)
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            problems.append(f"iteration {iteration}: unreadable record ({type(exc).__name__}: {exc})")
            continue
        views.append(view)
        if view.accepted:
            incumbent = view
    return views, problems


def loop_margins() -> Margins:
    """The loop's noise and closeness margins (its defaults: neither the CLI nor the app changes them)."""
    from aka_tui.agent.loop import LoopConfig

    return Margins(LoopConfig.noise_rel, LoopConfig.close_rel)


def make_view(problem: Any, profile: Any, iteration: int, kernel: str, result: dict[str, Any],
              proposal: dict[str, Any], facts: IterationFacts, incumbent: IterationView | None) -> IterationView:
    """One iteration's view, measured against the incumbent before it."""
    op, metrics = shape_metrics(problem, profile, result)
    error = ""
    for shape in result.get("shapes", []):
        if shape.get("error") and shape.get("status") != "skipped":
            error = f"{shape['shape_id']}: {shape['status']}: {shape['error'].get('message', '')}"
            break
    if result.get("compile_error"):
        error = f"compile: {result['compile_error'].get('message', '')}"
    author = str(proposal.get("author") or facts.author)
    screened_out = bool(proposal.get("screened_out", facts.screened_out))
    remeasure = proposal.get("remeasure") if isinstance(proposal.get("remeasure"), dict) else None
    fallback = next((m.error for m in metrics if not m.real and m.error), "")
    incumbent_s = incumbent.s_op if incumbent else None
    recorded = Recorded(facts.accepted, author not in ("", "aka agent"), op.correct, op.real, op.s_op, incumbent_s,
                        screened_out, remeasure, error, fallback)
    reason, decision = explain(recorded, loop_margins())
    return IterationView(
        iteration, author, facts.accepted, op.s_op, op.s_raw_op, op.correct, op.real,
        op.s_op - (incumbent_s or 0.0), str(proposal.get("rationale", "")), kernel,
        incumbent.kernel if incumbent else "", facts.sha, facts.tags, metrics, error,
        tuple(result.get("static_findings", [])), incumbent_s, screened_out, reason,
        tuple(line for line in decision if line), {k: v for k, v in proposal.items() if k != "transcript"},
        str((result.get("provenance") or {}).get("device", "")))
