"""Finding and summarising recorded sessions from their files alone (no git, so shipped examples work too).

A session directory (a repository made by the recorder, or a shipped example without `.git`) holds
`session.json`, `events.jsonl` and `iterations/NNNN/{kernel.py,result.json,proposal.json}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aka_tui.paths import checkout_dir
from aka_tui.record.events import read_events
from aka_tui.record.session_repo import SESSION_FILE, SessionError, read_meta

EXAMPLES_DIR = checkout_dir() / "sessions" / "examples"


@dataclass(frozen=True)
class SessionSummary:
    """One recorded session, as listed by `aka sessions` and on the Problems and Replay screens."""

    path: Path
    problem: str
    proposer: str
    hardware: str
    iterations: int
    best_s: float | None
    best_real: bool
    started: float
    example: bool = False
    tags: tuple[str, ...] = ()
    finished: bool = False

    @property
    def label(self) -> str:
        return ("example: " if self.example else "") + self.path.name


def read_session_summary(path: Path, example: bool = False) -> SessionSummary | None:
    """Summary of a session directory, or None when it is not one (unreadable files are skipped)."""
    try:
        meta = read_meta(path)
    except SessionError:
        return None
    events, _problems = read_events(path / "events.jsonl")
    evaluated = [e.data for e in events if e.kind == "candidate_evaluated"]
    real = [d for d in evaluated if d.get("correct") and d.get("real")]
    best = max(real, key=lambda d: float(d.get("s_op", 0.0)), default=None)
    tags = tuple(str(e.data.get("tag")) for e in events if e.kind == "candidate_accepted")
    return SessionSummary(path, str(meta.get("problem", "?")), str(meta.get("proposer", "?")),
                          str(meta.get("hardware_profile", "?")), len(evaluated),
                          float(best["s_op"]) if best else (0.0 if evaluated else None), best is not None,
                          events[0].ts if events else 0.0, example, tags,
                          any(e.kind == "session_finished" for e in events))


def list_sessions(directories: list[tuple[Path, bool]]) -> list[SessionSummary]:
    """Sessions under each (directory, is_example) pair, newest first, examples last."""
    found: list[SessionSummary] = []
    for directory, example in directories:
        if not directory.is_dir():
            continue
        for child in sorted(directory.iterdir()):
            if child.is_dir() and (child / SESSION_FILE).is_file():
                summary = read_session_summary(child, example)
                if summary is not None:
                    found.append(summary)
    return sorted(found, key=lambda s: (s.example, -s.started, s.path.name))


def session_dirs(sessions_dir: Path) -> list[tuple[Path, bool]]:
    """The user's sessions directory and the shipped examples (once, if they are the same)."""
    dirs = [(sessions_dir, False)]
    if not sessions_dir.exists() or EXAMPLES_DIR.resolve() != sessions_dir.resolve():
        dirs.append((EXAMPLES_DIR, True))
    return dirs


def resolve_session(session_id: str, sessions_dir: Path) -> Path:
    """The directory of session `session_id`: a path, a name under `sessions_dir`, or a shipped example."""
    candidates = [Path(session_id), sessions_dir / session_id, EXAMPLES_DIR / session_id]
    for candidate in candidates:
        if (candidate / SESSION_FILE).is_file():
            return candidate
    for candidate in candidates:
        if candidate.is_dir() and candidate.name == Path(session_id).name:
            raise SessionError(f"{candidate} is not a session (no {SESSION_FILE})")
    raise SessionError(f"no session {session_id!r} in {sessions_dir} or the shipped examples (see `aka sessions`)")
