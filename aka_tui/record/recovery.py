"""Making a killed session's repository safe to continue: what is committed stays, the rest is discarded.

A session killed (even with SIGKILL) mid-iteration can leave: scratch files in `.work/`, a half-written
`iterations/NNNN/` and a rewritten `kernel.py` without a commit, files staged in the index, stale git lock
files, and a truncated last line in `events.jsonl`. Committed candidates are never touched. The event log is
append-only, so its complete lines are kept (they say what happened, including the lost iteration's start)
and only a partial last line is cut.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from aka_tui.record.session_repo import EVENTS_FILE, SessionError, SessionRepo

OWNER_FILE = Path(".work") / "owner.pid"


def claim(session: SessionRepo) -> None:
    """Mark this process as the one running the session (checked by `running_owner` before a resume)."""
    path = session.path / OWNER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{os.getpid()}\n")


def running_owner(session_path: Path) -> int | None:
    """The pid of a live process that claimed the session, or None."""
    try:
        pid = int((session_path / OWNER_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    if pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def _repair_event_tail(path: Path) -> bool:
    """Cut a partial last line (a write killed midway) so the next event starts on its own line."""
    if not path.is_file():
        return False
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    path.write_bytes(data[: data.rfind(b"\n") + 1])
    return True


def _stale_locks(git_dir: Path) -> list[Path]:
    return [p for p in [git_dir / "index.lock", git_dir / "HEAD.lock", *git_dir.glob("refs/**/*.lock")]
            if p.is_file()]


def discard_uncommitted(session: SessionRepo) -> list[str]:
    """Remove everything a killed iteration left without a commit; returns what was discarded."""
    discarded: list[str] = []
    for lock in _stale_locks(session.path / ".git"):
        lock.unlink()
        discarded.append(str(lock.relative_to(session.path)))
    if (session.path / ".work").is_dir():
        shutil.rmtree(session.path / ".work")
        discarded.append(".work/")
    if _repair_event_tail(session.path / EVENTS_FILE):
        discarded.append(f"{EVENTS_FILE} (truncated last line)")
    repo = session.repo
    try:
        repo.git.read_tree("HEAD")  # unstage whatever a killed `index.add` staged
        status = str(repo.git.status("--porcelain=v1", "-z", "--untracked-files=all"))
    except Exception as exc:  # GitCommandError: the repository itself is damaged
        raise SessionError(f"cannot read the git status of {session.path}: {exc}") from None
    for entry in filter(None, status.split("\0")):
        code, name = entry[:2], entry[3:]
        if name == EVENTS_FILE:
            continue  # append-only: complete events stay and are committed with the next candidate
        if code == "??":
            (session.path / name).unlink(missing_ok=True)
        else:
            repo.git.checkout("HEAD", "--", name)
        discarded.append(name)
    iterations = session.path / "iterations"
    if iterations.is_dir():
        for folder in sorted(iterations.iterdir()):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    return discarded
