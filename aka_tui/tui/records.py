"""Recorded results the app shows: session directories and bench reports, read without git.

A session directory (a git repository made by the recorder, or a shipped example without `.git`) holds
`session.json`, `events.jsonl` and `iterations/NNNN/{kernel.py,result.json,proposal.json}`; everything the
app needs is in those files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.record.listing import SessionSummary, list_sessions, read_session_summary

__all__ = ["RecordedBest", "Records", "SessionSummary", "best_per_op", "list_sessions", "load_records",
           "read_session_summary", "report_bests"]


@dataclass
class RecordedBest:
    """The best S_op of an op over sessions and bench reports, and where it came from."""

    s_op: float
    real: bool
    hardware: str
    source: str


def report_files(directory: Path) -> list[Path]:
    """A report directory's JSON files, its subdirectories' too (a session's device runs are kept together)."""
    return sorted(p for p in directory.rglob("*.json") if p.is_file()) if directory.is_dir() else []


def _same_suite(data: dict, suite_name: str | None, top_level: bool) -> bool:
    """A report of the suite the app shows (by the suite directory's name; published operators share names with
    the shipped suite's). One that predates recording its suite counts only at the top level, as before."""
    recorded = data.get("suite_dir")
    if recorded is None:
        return top_level
    return suite_name is None or Path(str(recorded)).name == suite_name


def report_bests(directories: list[Path], suite_name: str | None = None) -> dict[str, RecordedBest]:
    """Best S_op per op in `aka bench` JSON reports of the suite `suite_name` (files that are not reports are
    skipped), compared within one hardware as `best_per_op` does."""
    return best_per_op(_report_records(directories, suite_name))


def _report_records(directories: list[Path], suite_name: str | None) -> dict[str, list[RecordedBest]]:
    records: dict[str, list[RecordedBest]] = {}
    for directory in directories:
        for path in report_files(directory):
            try:
                data: Any = json.loads(path.read_text())
                ops = data["ops"]
                hardware = str(data.get("hardware", {}).get("name", "?"))
                if not _same_suite(data, suite_name, path.parent == directory):
                    continue
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
            source = str(path.relative_to(directory))
            for op in ops if isinstance(ops, list) else []:
                try:
                    name, s_op, real = str(op["problem"]), float(op["s_op"]), bool(op.get("real"))
                except (KeyError, TypeError, ValueError):
                    continue
                records.setdefault(name, []).append(RecordedBest(s_op, real, hardware, source))
    return records


def best_per_op(records: dict[str, list[RecordedBest]]) -> dict[str, RecordedBest]:
    """The record each op shows. S is relative to a hardware's roofline, so records are compared within one
    hardware: the one with records for the most ops (the list's column stays comparable), and an op recorded only
    on others takes its best there. Within a hardware: a real kernel over any fallback (an op is not real when one
    of its shapes fell back, although its other shapes still add to S_op), then the higher S_op."""
    ops_on: dict[str, int] = {}
    for op_records in records.values():
        for hardware in {r.hardware for r in op_records}:
            ops_on[hardware] = ops_on.get(hardware, 0) + 1
    primary = min(ops_on, key=lambda h: (-ops_on[h], h)) if ops_on else None
    best: dict[str, RecordedBest] = {}
    for name, op_records in records.items():
        pool = [r for r in op_records if r.hardware == primary] or op_records
        best[name] = max(pool, key=lambda r: (r.real, r.s_op))
    return best


@dataclass
class Records:
    """Everything recorded that the Problems screen summarises."""

    sessions: list[SessionSummary] = field(default_factory=list)
    best: dict[str, RecordedBest] = field(default_factory=dict)

    def sessions_of(self, problem: str) -> list[SessionSummary]:
        return [s for s in self.sessions if s.problem == problem]


def load_records(session_dirs: list[tuple[Path, bool]], report_dirs: list[Path],
                 suite_name: str | None = None) -> Records:
    """Sessions and the suite's reports merged into the best S_op per op."""
    sessions = list_sessions(session_dirs)
    records = _report_records(report_dirs, suite_name)
    for s in sessions:
        if s.best_s is not None:
            records.setdefault(s.problem, []).append(RecordedBest(s.best_s, s.best_real, s.hardware, s.label))
    return Records(sessions, best_per_op(records))
