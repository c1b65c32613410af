"""Append-only event log (JSON lines) that drives the live view and replay.

Each event is one line written with a single `write` and flushed; a session killed mid-write leaves at most
a truncated last line, which the reader reports and skips — every complete event before it is kept.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_tui.record.secrets import scrub


@dataclass(frozen=True)
class Event:
    """One thing that happened in a session."""

    seq: int
    ts: float
    kind: str  # past tense: session_started, iteration_started, candidate_evaluated, candidate_accepted, ...
    data: dict[str, Any]


class EventLog:
    """`events.jsonl` of one session."""

    def __init__(self, path: Path, lock: threading.RLock | None = None) -> None:
        self.path = path
        self._seq = len(read_events(path)[0]) if path.exists() else 0
        self._lock = lock or threading.RLock()
        """Serialises appends across threads (the session repository's lock when it owns the log)."""

    def append(self, kind: str, **data: Any) -> Event:
        with self._lock:
            event = Event(self._seq, time.time(), kind, data)
            line = scrub(json.dumps({"seq": event.seq, "ts": event.ts, "kind": kind, "data": data}, default=str))
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            self._seq += 1
            return event


def read_events(path: Path) -> tuple[list[Event], list[str]]:
    """(events, problems): unreadable lines (a truncated tail) are reported, never fatal."""
    events: list[Event] = []
    problems: list[str] = []
    if not path.exists():
        return events, [f"{path} does not exist"]
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            events.append(Event(int(raw["seq"]), float(raw["ts"]), str(raw["kind"]), dict(raw.get("data", {}))))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            problems.append(f"{path}:{number}: unreadable event skipped (truncated write?)")
    return events, problems
