"""App-wide messages (past tense)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


@dataclass
class AgentEventReceived(Message):
    """An AgentLoop event, posted from the loop's thread."""

    event: Any


@dataclass
class IterationRecorded(Message):
    """A candidate was evaluated and recorded; `view` is its IterationView."""

    view: Any


@dataclass
class LoopMessage(Message):
    """A line for the agent log (warnings from retrieval and the like)."""

    text: str


@dataclass
class RunnerPhaseChanged(Message):
    """The live session's runner changed phase (starting, running, paused, stopping, finished, error)."""

    phase: str
