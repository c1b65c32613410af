"""The agent log's line for each loop event (None: not shown)."""

from __future__ import annotations

from typing import Any, Callable


def _why(d: dict[str, Any]) -> str:
    """' — the first failure' of an incorrect candidate (recorded since the event carried it), else ''."""
    return f" — {d['why']}" if d.get("why") and not d.get("correct", True) else ""


def _evaluated(d: dict[str, Any]) -> str:
    state = ("correct" if d["correct"] else "INCORRECT") + ("" if d["real"] else ", fallback")
    if d.get("screened_out"):
        return f"  S_op {d['s_op']:.4g} {state} → screened out (not evaluated further){_why(d)}"
    tuned = d.get("tuned_next")
    note = ("" if tuned is None else "; the agent tunes this kernel from here (its TUNABLES)" if tuned
            else "; it declares no TUNABLES / SEARCH_SPACE, so the agent's next candidates do not carry it")
    return f"  S_op {d['s_op']:.4g} {state} → {'ACCEPTED' if d['accepted'] else 'rejected'}{_why(d)}{note}"


def _remeasured(d: dict[str, Any]) -> str:
    samples = d.get("samples") or {}
    spread = "; ".join(f"{k} " + ", ".join(f"{v:.4g}" for v in values) for k, values in samples.items())
    return (f"  re-measured interleaved ({d.get('rounds', '?')} rounds: {spread}) → "
            f"{'better' if d.get('accepted') else 'not better by the noise margin'}")


LINES: dict[str, Callable[[dict[str, Any]], str]] = {
    "baseline_measured": lambda d: f"baseline (eager reference): S_raw_op {d['s_raw']:.4g} — a fallback, S = 0",
    "iteration_started": lambda d: f"iteration {d['iteration']} started",
    "knowledge_retrieved": lambda d: f"  knowledge: {', '.join(d['ids'][:6])}",
    "candidate_proposed": lambda d: f"  proposal{' [' + d['path'] + ']' if d.get('path') else ''}: {d['rationale']}",
    "candidate_injected": lambda d: f"iteration {d['iteration']}: evaluating the edit by {d['author']}",
    "candidate_screened": lambda d: (f"  screened: S_op {d['s_op']:.4g} vs incumbent {d['incumbent_s']:.4g} → "
                                     f"{'worth a full evaluation' if d['promising'] else 'not promising'}{_why(d)}"),
    "candidates_remeasured": _remeasured,
    "remeasure_skipped": lambda d: f"  {d['reason']}; not accepted",
    "candidate_evaluated": _evaluated,
    "session_finished": lambda d: f"finished: {d['reason']}; best S_op {d['best_s']:.4g}",
}


def event_line(kind: str, data: dict[str, Any]) -> str | None:
    """The log line of one event; a malformed event gives a line saying so, not an exception."""
    render = LINES.get(kind)
    if render is None:
        return None
    try:
        return render(data)
    except (KeyError, TypeError, ValueError):
        return f"({kind}: {data})"
