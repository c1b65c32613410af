"""The agent loop's event vocabulary: every kind of event the loop and its measurer emit, and the event itself.

The loop calls `on_event` with an `AgentEvent` for each thing it did (past tense) and appends the same kind and
data to a recorded session's event log; the CLI prints progress lines from them and the app renders them in its
log (`aka_tui/tui/event_lines.py`), so a kind is added here before anything emits it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

AgentEventKind = Literal[
    "baseline_measured", "baseline_skipped", "iteration_started", "knowledge_retrieved", "candidate_proposed",
    "candidate_injected", "candidates_screened_in_parallel", "candidate_screened", "candidates_remeasured",
    "remeasure_skipped", "candidate_evaluated", "session_finished",
]
"""Every kind of event the loop (and its measurer) emits; the CLI's progress lines and the app's log read them."""


@dataclass(frozen=True)
class AgentEvent:
    """Something the loop did (past tense), with its data."""

    kind: AgentEventKind
    data: dict[str, Any]
