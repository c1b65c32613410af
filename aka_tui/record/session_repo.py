"""One git repository per session: a commit per candidate (failures too), tags for accepted kernels.

Layout of a session repository:
    session.json                 what was optimised, where, with which proposer and seed
    events.jsonl                 the append-only event log
    kernel.py                    the candidate of the latest commit (so `git diff` shows each revision)
    iterations/NNNN/kernel.py    every candidate, as evaluated
    iterations/NNNN/result.json  the evaluator's record
    iterations/NNNN/proposal.json  rationale, tactics, masked memory, transcript (secrets scrubbed)
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_tui.errors import AkaError
from aka_tui.record.events import EventLog
from aka_tui.record.secrets import scrub

AGENT = ("aka agent", "agent@aka-tui.invalid")
# Every git command on a session repository runs with these: a session (possibly someone else's) never runs
# hooks or a file-system monitor command, whatever its .git/config says.
SAFE_GIT_OPTIONS = ("core.hooksPath=/dev/null", "core.fsmonitor=false")
SESSION_FILE = "session.json"
EVENTS_FILE = "events.jsonl"
ITERATION_RE = re.compile(r"^iter (\d+):")
# GitPython's index operations chdir into the repository's working tree for their duration, and the working
# directory is process-wide: two sessions committing from two threads (the tests run loops side by side)
# could stat each other's relative paths. Index operations of all repositories in a process take this lock.
_INDEX_LOCK = threading.Lock()


class SessionError(AkaError):
    title = "session error"


@dataclass(frozen=True)
class CandidateCommit:
    """A recorded candidate, as read back from the repository."""

    iteration: int
    sha: str
    message: str
    author: str
    tags: tuple[str, ...]


def _git() -> Any:
    try:
        import git
    except ImportError as exc:
        raise SessionError(f"GitPython is not installed ({exc}); run scripts/setup.sh") from None
    return git


def read_meta(path: Path) -> dict[str, Any]:
    """`session.json` of a session directory; a missing or corrupt file is a SessionError."""
    try:
        meta = json.loads((path / SESSION_FILE).read_text())
    except FileNotFoundError:
        raise SessionError(f"{path} is not a session (no {SESSION_FILE})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionError(f"{path / SESSION_FILE} is unreadable ({exc})") from None
    if not isinstance(meta, dict):
        raise SessionError(f"{path / SESSION_FILE} is not a JSON object")
    return meta


def _dump(data: Any) -> str:
    return scrub(json.dumps(data, indent=1, sort_keys=True, default=str)) + "\n"


class SessionRepo:
    """A session's repository and event log."""

    def __init__(self, path: Path, repo: Any) -> None:
        self.path = path
        self.repo = repo
        repo.git.set_persistent_git_options(c=list(SAFE_GIT_OPTIONS))
        self.lock = threading.RLock()
        """Serialises this session's commits, tags and event appends across threads (the app's loop and its UI)."""
        self.events = EventLog(path / EVENTS_FILE, self.lock)

    @staticmethod
    def create(path: Path, meta: dict[str, Any]) -> SessionRepo:
        """A new session repository at `path` (which must not exist or be empty)."""
        git = _git()
        if path.exists() and any(path.iterdir()):
            raise SessionError(f"{path} already exists and is not empty; resume it or choose another name")
        path.mkdir(parents=True, exist_ok=True)
        repo = git.Repo.init(path, initial_branch="main")
        with repo.config_writer() as config:  # CI has no global identity
            config.set_value("user", "name", AGENT[0])
            config.set_value("user", "email", AGENT[1])
        (path / SESSION_FILE).write_text(_dump(meta))
        (path / ".gitignore").write_text(".work/\n")  # scratch files of the evaluator
        session = SessionRepo(path, repo)
        session.events.append("session_started", **{k: meta[k] for k in meta if k in ("problem", "proposer", "seed")})
        session._commit("session started", [SESSION_FILE, EVENTS_FILE, ".gitignore"], AGENT)
        return session

    @staticmethod
    def open(path: Path) -> SessionRepo:
        """An existing session (to resume it or replay it)."""
        git = _git()
        if not (path / SESSION_FILE).is_file():
            raise SessionError(f"{path} is not a session repository (no {SESSION_FILE})")
        try:
            repo = git.Repo(path)
        except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError):
            hint = " (a shipped example: `git clone history.bundle DIR` gives its repository)" \
                if (path / "history.bundle").is_file() else ""
            raise SessionError(f"{path} has a {SESSION_FILE} but no git repository{hint}") from None
        return SessionRepo(path, repo)

    @property
    def meta(self) -> dict[str, Any]:
        return read_meta(self.path)

    def _commit(self, message: str, files: list[str], author: tuple[str, str]) -> str:
        git = _git()
        actor = git.Actor(*author)
        with self.lock, _INDEX_LOCK:
            self.repo.index.add(files)
            commit = self.repo.index.commit(scrub(message), author=actor, committer=git.Actor(*AGENT),
                                            skip_hooks=True)
        return str(commit.hexsha)

    def next_iteration(self) -> int:
        done = [c.iteration for c in self.candidates()]
        return max(done, default=0) + 1

    def record_candidate(self, iteration: int, source: str, result: dict[str, Any], proposal: dict[str, Any],
                         summary: str, author: tuple[str, str] = AGENT) -> str:
        """Commit one evaluated candidate (passing or not); returns the commit sha."""
        folder = Path("iterations") / f"{iteration:04d}"
        (self.path / folder).mkdir(parents=True, exist_ok=True)
        clean_source = scrub(source)
        (self.path / "kernel.py").write_text(clean_source)
        (self.path / folder / "kernel.py").write_text(clean_source)
        (self.path / folder / "result.json").write_text(_dump(result))
        (self.path / folder / "proposal.json").write_text(_dump(proposal))
        self.events.append("candidate_recorded", iteration=iteration, summary=summary, author=author[0])
        files = ["kernel.py", EVENTS_FILE] + [str(folder / n) for n in ("kernel.py", "result.json", "proposal.json")]
        return self._commit(f"iter {iteration}: {summary}", files, author)

    def tag_accepted(self, sha: str, name: str) -> str:
        tag = re.sub(r"[^A-Za-z0-9._-]", "-", name)
        with self.lock:
            self.repo.create_tag(tag, ref=sha, message=f"accepted: {name}")
            self.events.append("candidate_accepted", sha=sha, tag=tag)
            self._commit(f"accepted {sha[:10]} as {tag}", [EVENTS_FILE], AGENT)
        return tag

    def candidates(self) -> list[CandidateCommit]:
        """Recorded candidates in iteration order."""
        tags: dict[str, list[str]] = {}
        for tag in self.repo.tags:
            tags.setdefault(str(tag.commit.hexsha), []).append(tag.name)
        found = []
        for commit in self.repo.iter_commits("main"):
            match = ITERATION_RE.match(str(commit.message))
            if match:
                found.append(CandidateCommit(int(match.group(1)), str(commit.hexsha), str(commit.message).strip(),
                                             str(commit.author.name), tuple(tags.get(str(commit.hexsha), []))))
        return sorted(found, key=lambda c: c.iteration)

    def iteration_files(self, iteration: int) -> dict[str, Any]:
        """kernel source, result and proposal of one iteration, read from the working tree."""
        folder = self.path / "iterations" / f"{iteration:04d}"
        if not folder.is_dir():
            raise SessionError(f"session {self.path.name} has no iteration {iteration}")
        try:
            return {"kernel": (folder / "kernel.py").read_text(encoding="utf-8"),
                    "result": json.loads((folder / "result.json").read_text(encoding="utf-8")),
                    "proposal": json.loads((folder / "proposal.json").read_text(encoding="utf-8"))}
        except (OSError, ValueError) as exc:  # ValueError: damaged JSON or bytes that are not UTF-8
            raise SessionError(f"session {self.path.name}, iteration {iteration}: unreadable record ({exc})") from None

    def diff(self, old_sha: str, new_sha: str) -> str:
        """Unified diff of kernel.py between two recorded candidates."""
        return str(self.repo.git.diff(old_sha, new_sha, "--", "kernel.py"))
