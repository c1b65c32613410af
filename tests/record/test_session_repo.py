"""Session repositories: a commit per candidate, a person's edits authored as the person, tags, resume,
a truncated event log, and no secret ever written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aka_tui.record.events import EventLog, read_events
from aka_tui.record.secrets import REDACTED, scrub
from aka_tui.record.session_repo import SessionError, SessionRepo

KEY = "sk-ant-api03-THISISNOTAREALKEY0123456789abcdef"


@pytest.fixture()
def session(tmp_path: Path) -> SessionRepo:
    return SessionRepo.create(tmp_path / "s1", {"problem": "rms_norm", "proposer": "offline", "seed": 7})


def test_candidates_are_commits_including_failures(session: SessionRepo) -> None:
    a = session.record_candidate(1, "print('v1')\n", {"status": "wrong_output"}, {"rationale": "first"}, "wrong_output")
    b = session.record_candidate(2, "print('v2')\n", {"status": "passed", "s": 0.4}, {"rationale": "fix"}, "passed S=0.40")
    commits = session.candidates()
    assert [c.iteration for c in commits] == [1, 2] and commits[0].sha == a and commits[1].sha == b
    assert "-print('v1')" in session.diff(a, b) and "+print('v2')" in session.diff(a, b)
    assert session.iteration_files(1)["result"]["status"] == "wrong_output"
    assert session.next_iteration() == 3


def test_person_edit_is_authored_by_the_person_and_accept_tags(session: SessionRepo) -> None:
    session.record_candidate(1, "x = 1\n", {}, {}, "passed")
    sha = session.record_candidate(2, "x = 2\n", {}, {"rationale": "edited by hand"}, "passed (edit)",
                                   author=("Ada Engineer", "ada@example.com"))
    tag = session.tag_accepted(sha, "rms_norm best v1")
    commits = session.candidates()
    assert commits[1].author == "Ada Engineer" and commits[0].author == "aka agent"
    assert commits[1].tags == (tag,) and tag == "rms_norm-best-v1"


def test_resume_continues_numbering(session: SessionRepo) -> None:
    session.record_candidate(1, "a\n", {}, {}, "ok")
    resumed = SessionRepo.open(session.path)
    assert resumed.next_iteration() == 2
    assert resumed.meta["problem"] == "rms_norm"
    resumed.record_candidate(2, "b\n", {}, {}, "ok")
    assert [e.kind for e in read_events(session.path / "events.jsonl")[0]] == [
        "session_started", "candidate_recorded", "candidate_recorded"]


def test_no_secret_reaches_disk(session: SessionRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    transcript = {"request": {"headers": {"x-api-key": KEY}}, "text": f"my key is {KEY}"}
    session.record_candidate(1, f"# {KEY}\n", {"note": KEY}, {"transcript": transcript}, f"ok {KEY}")
    session.events.append("log", line=f"calling with {KEY}")
    tracked = subprocess.run(["git", "-C", str(session.path), "log", "-p", "--all"], capture_output=True, text=True).stdout
    on_disk = "".join(p.read_text() for p in session.path.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert KEY not in tracked and KEY not in on_disk
    assert REDACTED in on_disk


def test_scrub_patterns() -> None:
    assert scrub("Authorization: Bearer abcdefghijklmnop") == f"Authorization: {REDACTED}"
    assert "sk-ant-" not in scrub("key sk-ant-abc123def456ghi789")


def test_truncated_event_log_keeps_every_complete_event(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    log.append("a", n=1)
    log.append("b", n=2)
    with open(tmp_path / "events.jsonl", "a") as handle:
        handle.write('{"seq": 2, "ts": 1.0, "kind": "c", "da')  # killed mid-write
    events, problems = read_events(tmp_path / "events.jsonl")
    assert [e.kind for e in events] == ["a", "b"] and len(problems) == 1 and "truncated" in problems[0]


def test_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="not a session repository"):
        SessionRepo.open(tmp_path)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")
    with pytest.raises(SessionError, match="not empty"):
        SessionRepo.create(tmp_path / "busy", {})


def test_sessions_commit_from_two_threads_at_once(tmp_path: Path) -> None:
    """GitPython chdirs into a repository for each index operation, and the working directory is shared by
    all threads: two sessions recording side by side once failed with FileNotFoundError on the other's
    relative path (tests/agent/test_loop.py runs loops side by side)."""
    import threading

    repos = [SessionRepo.create(tmp_path / f"s{i}", {"problem": "rms_norm", "proposer": "offline", "seed": i})
             for i in range(3)]
    errors: list[BaseException] = []

    def record(repo: SessionRepo) -> None:
        try:
            for it in range(1, 26):
                repo.record_candidate(it, f"print({it})\n", {"status": "passed"}, {"rationale": "r"}, "passed")
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(r,)) for r in repos]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all([c.iteration for c in r.candidates()] == list(range(1, 26)) for r in repos)
