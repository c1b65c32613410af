"""Making a killed session's repository safe to continue: what is committed stays, the rest is discarded.

A session killed (even with SIGKILL) mid-iteration can leave: scratch files in `.work/`, a half-written
`iterations/NNNN/` and a rewritten `kernel.py` without a commit, files staged in the index, stale git lock
files, and a truncated last line in `events.jsonl`. Committed candidates are never touched. The event log is
append-only, so its complete lines are kept (they say what happened, including the lost iteration's start)
and only a partial last line is cut.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from aka_tui.record.session_repo import EVENTS_FILE, SessionError, SessionRepo

OWNER_FILE = Path(".work") / "owner.pid"
LOCK_FILE = Path(".git") / "aka-session.lock"  # inside .git: never part of the work tree, never discarded
_HELD: dict[str, int] = {}  # session path → the open lock file's descriptor (held until the process ends)


def lock_session(path: Path) -> None:
    """Take the session's exclusive lock (an flock: released when this process ends, however it ends).
    Two aka processes (or two sessions of one app) can never run the same session at once."""
    key = str(path.resolve())
    if key in _HELD or not (path / ".git").is_dir():
        return  # held already by this process; or no repository to run (opening it says why)
    lock = path / LOCK_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        owner = running_owner(path)
        raise SessionError(f"session {path.name} is being run by another aka process"
                           + (f" (pid {owner})" if owner else "") + "; wait for it or stop it first") from None
    _HELD[key] = fd


def unlock_session(path: Path) -> None:
    """Release the session's lock (at the end of a run in a process that goes on, such as the app)."""
    fd = _HELD.pop(str(path.resolve()), None)
    if fd is not None:
        os.close(fd)


def claim(session: SessionRepo) -> None:
    """Lock the session for this process and record its pid (shown to a second process that tries)."""
    lock_session(session.path)
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
