"""Holds a person must lift before a result scores, and the record of lifting them.

Two verdicts hold S at 0 until a person accepts them: `suspicious` (the candidate's source reads the harness:
static scan) for the whole candidate, and `over_roofline` (S_raw > 1: faster than the roofline allows) per shape.
An acceptance names who, when, why and the candidate file's hash; it is stored in the result record itself
(`CandidateResult.acceptances`), so a report, a re-score and a recorded session all carry it. A changed file
needs a new acceptance. The TUI calls `accept` (one line: `result = accept(result, kind, shape_id, reason=...)`)
and records the returned result in the session; the CLI takes `--accept KIND[=TARGET]`.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.measure.verdicts import HOLDS, OVER_ROOFLINE, SUSPICIOUS
from aka_tui.errors import EvaluationError


@dataclass(frozen=True)
class Acceptance:
    """A person accepted a held verdict."""

    kind: str  # "suspicious" | "over_roofline"
    shape_id: str | None  # over_roofline: one shape (None: every shape of the candidate); suspicious: None
    by: str
    reason: str
    at_unix: float
    candidate_sha256: str | None  # the file that was accepted

    @staticmethod
    def from_json(data: dict[str, Any]) -> Acceptance:
        return Acceptance(str(data["kind"]), data.get("shape_id"), str(data.get("by", "")), str(data.get("reason", "")),
                          float(data.get("at_unix", 0.0)), data.get("candidate_sha256"))


def accept(result: CandidateResult, kind: str, shape_id: str | None = None, by: str | None = None,
           reason: str = "") -> CandidateResult:
    """The result with one more acceptance (the hook the TUI and the CLI call)."""
    if kind not in HOLDS:
        raise EvaluationError(f"cannot accept {kind!r}: a person accepts one of {', '.join(HOLDS)}")
    if kind == SUSPICIOUS:
        shape_id = None
    elif shape_id is not None and shape_id not in {s.shape_id for s in result.shapes}:
        raise EvaluationError(f"{result.problem} has no evaluated shape {shape_id!r} to accept")
    record = Acceptance(kind, shape_id, by or _who(), reason, time.time(), result.provenance.get("candidate_sha256"))
    return replace(result, acceptances=[*result.acceptances, asdict(record)])


def accepted(result: CandidateResult, kind: str, shape_id: str | None = None) -> bool:
    """Whether a person accepted `kind` for this candidate file (and shape, for over_roofline)."""
    sha = result.provenance.get("candidate_sha256")
    for data in result.acceptances:
        item = Acceptance.from_json(data)
        if item.kind != kind or (item.candidate_sha256 and sha and item.candidate_sha256 != sha):
            continue
        if kind == SUSPICIOUS or item.shape_id is None or item.shape_id == shape_id:
            return True
    return False


def pending(result: CandidateResult, over_roofline_shapes: list[str]) -> list[tuple[str, str | None]]:
    """(kind, shape) of every hold still waiting for a person: what the TUI lists to accept."""
    holds: list[tuple[str, str | None]] = []
    if result.suspicious and not accepted(result, SUSPICIOUS):
        holds.append((SUSPICIOUS, None))
    holds += [(OVER_ROOFLINE, s) for s in over_roofline_shapes if not accepted(result, OVER_ROOFLINE, s)]
    return holds


def apply_cli(result: CandidateResult, specs: list[str], reason: str, per_op: bool = False) -> CandidateResult:
    """`--accept KIND[=TARGET]` for one result: TARGET is a shape id (`aka eval`), or `OP[:SHAPE]` with
    `per_op` (`aka bench`, where specs naming another op are skipped)."""
    if specs and not reason.strip():
        raise EvaluationError("--accept needs --accept-reason TEXT: an acceptance records why")
    for spec in specs:
        kind, _, target = spec.partition("=")
        kind, target = kind.strip().replace("-", "_"), target.strip()
        shape: str | None = target or None
        if per_op and target:
            op, _, shape_part = target.partition(":")
            if op != result.problem:
                continue
            shape = shape_part or None
        result = accept(result, kind, shape, reason=reason)
    return result


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user database entry (containers)
        return "unknown"
