"""A candidate the loop tried (`Attempt`), a run's outcome, and what the loop reads off a candidate's score."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aka_tui.agent.offline import Proposal
from aka_tui.bench.scoring.score import OpScore


@dataclass
class Attempt:
    """One candidate the loop evaluated: its proposal, score, verdict and commit."""

    iteration: int
    proposal: Proposal
    score: OpScore
    accepted: bool
    sha: str | None = None
    error: str = ""


@dataclass
class LoopOutcome:
    """What one run of the loop produced: its attempts, the baseline's S_raw and why it stopped."""

    attempts: list[Attempt] = field(default_factory=list)
    baseline_s_raw: float = 0.0
    stop_reason: str = ""

    @property
    def incumbent(self) -> Attempt | None:
        accepted = [a for a in self.attempts if a.accepted]
        return accepted[-1] if accepted else None


def first_error(result: Any) -> str:
    """The candidate's compile error, else the first error of its shapes (skipped shapes aside), or "" when none
    failed."""
    if getattr(result, "compile_error", None) is not None:
        return f"{result.compile_error.kind}: {result.compile_error.message}"
    for shape in result.shapes:
        if shape.error is not None and shape.status != "skipped":
            return f"{shape.shape_id}: {shape.status}: {shape.error.message}"
    return ""


def measurements_text(score: OpScore) -> str:
    """Per-shape time, roofline and S of a scored candidate, for a prompt."""
    lines = [f"S_op {score.s_op:.4f} (correct={score.correct}, real={score.real})"]
    for s in score.shapes:
        lines.append(f"- {s.shape_id}: T {s.time_ms or 0:.4f} ms, T_SOL {s.t_sol_ms or 0:.4f} ms, S {s.s:.3f}, "
                     f"bound by {s.bottleneck}")
    return "\n".join(lines)


def bottleneck_of(score: OpScore, launch_floor_ms: float | None) -> str:
    """The bottleneck of the heaviest shape that is furthest from its roofline."""
    shapes = [s for s in score.shapes if s.time_ms is not None]
    if not shapes:
        return "memory-bound"
    worst = max(shapes, key=lambda s: s.weight * (1.0 - min(s.s_raw, 1.0)))
    if launch_floor_ms and worst.time_ms is not None and worst.time_ms < 3 * launch_floor_ms:
        return "launch-bound"
    return "compute-bound" if worst.bottleneck == "compute" else "memory-bound"


def one_line(text: str, width: int = 140) -> str:
    """The first non-empty line of text, at most width characters (for progress lines)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[:width - 1] + "…"
