"""Why the loop accepted or rejected a candidate, in words, from what the session recorded.

The loop's rule (aka_tui/agent/loop.py): a candidate must be correct and real; once there is an incumbent it
is first screened on the weighted shapes (more than `close_rel` slower: not evaluated further); a candidate
that looks better or close is re-measured interleaved with the incumbent, and accepted only when its median
S_op beats the incumbent's median by more than `noise_rel`. A person's edit is adopted when correct and real.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Recorded:
    """What the session recorded about one candidate and the incumbent it was measured against."""

    accepted: bool
    by_person: bool
    correct: bool
    real: bool
    s_op: float
    incumbent_s_op: float | None
    screened_out: bool = False
    remeasure: dict[str, Any] | None = None
    error: str = ""
    fallback_reason: str = ""


@dataclass(frozen=True)
class Margins:
    """The loop's margins (LoopConfig.noise_rel and close_rel)."""

    noise_rel: float
    close_rel: float


def _spread(samples: list[float]) -> str:
    """'median [min–max]' of re-measured S_op samples."""
    if len(samples) == 1:
        return f"{samples[0]:.4g}"
    return f"{statistics.median(samples):.4g} [{min(samples):.4g}–{max(samples):.4g}]"


def _relative(new: float, old: float) -> str:
    return f"{(new / old - 1.0) * 100:+.0f}%" if old > 0 else "new"


def remeasure_lines(record: dict[str, Any] | None) -> list[str]:
    """The re-measurement as recorded: rounds, and the S_op samples of both (median [min–max])."""
    if not isinstance(record, dict):
        return []
    samples = record.get("samples") or {}
    rounds, planned = record.get("rounds", 0), record.get("rounds_planned", "?")
    if not samples.get("candidate"):
        return [f"re-measure: 0 of {planned} rounds ({record.get('reason') or 'not run'})"]
    lines = [f"re-measured interleaved, {rounds} of {planned} rounds (S_op median [min–max]):",
             f"  candidate {_spread(list(samples['candidate']))}",
             f"  incumbent {_spread(list(samples.get('incumbent') or []))}" if samples.get("incumbent") else ""]
    if record.get("reason"):
        lines.append(f"  ({record['reason']})")
    return [line for line in lines if line]


def explain(r: Recorded, margins: Margins) -> tuple[str, list[str]]:
    """(a short reason for the iteration list, the full account for the Decision tab)."""
    noise = f"{margins.noise_rel * 100:g}%"
    inc = f"{r.incumbent_s_op:.4g}" if r.incumbent_s_op is not None else "-"
    lines = remeasure_lines(r.remeasure)
    if r.by_person:
        if r.accepted:
            return "your edit: correct, real", ["A person's edit that is correct and real is adopted as the "
                                                "incumbent (their choice: no noise margin).", *lines]
        why = "incorrect" if not r.correct else "a fallback"
        return f"your edit: {why}", [f"The edit was not adopted: it is {why}.", r.error or r.fallback_reason]
    if not r.correct:
        return "incorrect", ["Rejected: the candidate failed correctness.", r.error]
    if not r.real:
        return "fallback", ["Rejected: a fallback (PyTorch or a foreign kernel computed), so S = 0.",
                            r.fallback_reason]
    if r.screened_out:
        return (f"screened: {r.s_op:.4g} vs {inc}",
                [f"Screened out on the weighted shapes: S_op {r.s_op:.4g} against the incumbent's {inc}, more "
                 f"than {margins.close_rel * 100:g}% slower, so it was not evaluated further."])
    samples = (r.remeasure or {}).get("samples") or {}
    if r.remeasure is not None and not samples.get("candidate"):
        return "win not verified", [f"Not accepted: {r.remeasure.get('reason') or 'no re-measurement round ran'}.",
                                    *lines]
    if samples.get("candidate") and samples.get("incumbent"):
        cand, incumbent = statistics.median(samples["candidate"]), statistics.median(samples["incumbent"])
        versus = f"median {cand:.4g} vs {incumbent:.4g} ({_relative(cand, incumbent)})"
        if r.accepted:
            return f"re-measured {versus}", [f"Accepted: re-measured, the candidate's median beats the "
                                            f"incumbent's by more than the {noise} noise margin.", *lines]
        return (f"not > +{noise}: {versus}",
                [f"Rejected: one evaluation gave S_op {r.s_op:.4g} against {inc}, but re-measured interleaved "
                 f"the candidate's median does not beat the incumbent's by more than {noise}.", *lines])
    if r.incumbent_s_op is None:
        return ("first correct, real kernel" if r.accepted else "rejected",
                ["Accepted: the first correct, real kernel of the session." if r.accepted else "Rejected."])
    if r.accepted:
        return (f"{_relative(r.s_op, r.incumbent_s_op)} over {inc}",
                [f"Accepted: S_op {r.s_op:.4g} beats the incumbent's {inc} by more than {noise}."])
    return (f"not > +{noise} over {inc}",
            [f"Rejected: S_op {r.s_op:.4g} does not beat the incumbent's {inc} by more than {noise}."])
