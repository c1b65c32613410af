"""A killed session's leftovers are discarded without touching a commit; recorded sessions are listed and
read from their files (the shipped examples have no .git)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from aka_tui.record.events import read_events
from aka_tui.record.history import exported_step, read_steps
from aka_tui.record.listing import EXAMPLES_DIR, list_sessions, resolve_session, session_dirs
from aka_tui.record.recovery import claim, discard_uncommitted, running_owner
from aka_tui.record.session_repo import SessionError, SessionRepo


def _status(path: Path) -> str:
    return subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True).stdout


def test_discard_uncommitted_keeps_every_commit_and_cleans_the_rest(tmp_path: Path) -> None:
    session = SessionRepo.create(tmp_path / "s", {"problem": "rms_norm", "proposer": "offline", "seed": 0})
    sha = session.record_candidate(1, "v1\n", {"ok": 1}, {"rationale": "first"}, "accepted S_op=0.1 correct")
    session.events.append("candidate_evaluated", iteration=1, accepted=True, sha=sha)
    # what a SIGKILL during iteration 2 leaves behind
    (session.path / ".work").mkdir()
    (session.path / ".work" / "candidate_0002.py").write_text("scratch")
    (session.path / "iterations" / "0002").mkdir()
    (session.path / "iterations" / "0002" / "kernel.py").write_text("half")
    (session.path / "iterations" / "0002" / "result.json").write_text("{}")
    session.repo.index.add(["iterations/0002/result.json"])  # staged by a killed `index.add`
    (session.path / "kernel.py").write_text("half\n")
    with open(session.path / "events.jsonl", "a") as handle:
        handle.write('{"seq": 9, "ts": 1.0, "kind": "cand')
    (session.path / ".git" / "index.lock").write_text("")

    discarded = discard_uncommitted(session)

    assert {"kernel.py", "iterations/0002/kernel.py", "iterations/0002/result.json", ".work/",
            ".git/index.lock"} <= set(discarded)
    assert not (session.path / "iterations" / "0002").exists() and not (session.path / ".work").exists()
    assert (session.path / "kernel.py").read_text() == "v1\n"
    assert _status(session.path).strip() == "M events.jsonl"  # complete events stay, committed next time
    events, problems = read_events(session.path / "events.jsonl")
    assert problems == [] and events[-1].kind == "candidate_evaluated"
    assert [c.sha for c in session.candidates()] == [sha] and session.next_iteration() == 2
    session.record_candidate(2, "v2\n", {}, {}, "rejected")  # the repository takes commits again
    assert [c.iteration for c in session.candidates()] == [1, 2]


def test_running_owner_is_the_live_claimant_only(tmp_path: Path) -> None:
    import os

    session = SessionRepo.create(tmp_path / "s", {"problem": "p"})
    assert running_owner(session.path) is None
    claim(session)
    assert running_owner(session.path) is None  # ourselves
    (session.path / ".work" / "owner.pid").write_text(f"{os.getppid()}\n")
    assert running_owner(session.path) == os.getppid()
    (session.path / ".work" / "owner.pid").write_text("999999999\n")
    assert running_owner(session.path) is None


def test_examples_are_listed_and_read_without_git() -> None:
    summaries = {s.path.name: s for s in list_sessions(session_dirs(Path("/nonexistent")))}
    example = summaries["rms_norm-example"]
    assert example.example and example.finished and example.tags == ("rms_norm-best",)
    assert example.iterations == 3 and example.best_real and example.best_s
    assert resolve_session("rms_norm-example", Path("/nonexistent")) == EXAMPLES_DIR / "rms_norm-example"
    steps, problems = read_steps(EXAMPLES_DIR / "rms_norm-example")
    assert problems == [] and [s.iteration for s in steps] == [1, 2, 3]
    assert steps[1].verdict == "accepted" and steps[1].facts.tags == ("rms_norm-best",)
    assert steps[1].dropout["masked_tactics"] == ["tile", "warps"] and not steps[1].screened_out
    assert exported_step(steps).iteration == 2 and exported_step(steps, 3).iteration == 3


def test_export_without_a_tag_takes_the_best_correct_real_candidate(tmp_path: Path) -> None:
    copy = tmp_path / "untagged"
    shutil.copytree(EXAMPLES_DIR / "rms_norm-example", copy)
    lines = [line for line in (copy / "events.jsonl").read_text().splitlines()
             if json.loads(line)["kind"] != "candidate_accepted"]
    (copy / "events.jsonl").write_text("\n".join(lines) + "\n")
    steps, _ = read_steps(copy)
    best = max((s for s in steps if s.facts.real), key=lambda s: s.facts.s_op or 0.0)
    assert exported_step(steps).iteration == best.iteration
    with pytest.raises(SessionError, match="no recorded iteration 7"):
        exported_step(steps, 7)


def test_unknown_and_corrupt_sessions_are_session_errors(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="no session 'nope'"):
        resolve_session("nope", tmp_path)
    (tmp_path / "plain").mkdir()
    with pytest.raises(SessionError, match="not a session"):
        resolve_session("plain", tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "session.json").write_text("{not json")
    from aka_tui.record.session_repo import read_meta

    with pytest.raises(SessionError, match="unreadable"):
        read_meta(resolve_session("bad", tmp_path))


def test_a_recorded_kernel_that_is_not_text_is_a_session_error(tmp_path: Path) -> None:
    from aka_tui.agent.session_commands import export_text

    copy = tmp_path / "damaged"
    shutil.copytree(EXAMPLES_DIR / "rms_norm-example", copy)
    steps, _ = read_steps(copy)
    steps[1].kernel_path.write_bytes(b"\xab\xcd not text")
    with pytest.raises(SessionError, match="kernel.py is unreadable"):
        export_text(copy.name, {}, steps[1])
