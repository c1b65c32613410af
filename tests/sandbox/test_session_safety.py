"""Session repositories never run hooks or configured commands, and a session is run by one process at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aka_tui.cli import main
from aka_tui.record.recovery import claim, discard_uncommitted, lock_session, unlock_session
from aka_tui.record.session_repo import SessionRepo
from tests.conftest import REPO

HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "reference-transaction",
         "post-index-change")


def _plant(session: Path, marker: Path) -> None:
    """Every hook, and a file-system monitor command, append to `marker` if they ever run."""
    script = f"#!/bin/sh\necho \"$0\" >> {marker}\n"
    for name in HOOKS:
        hook = session / ".git" / "hooks" / name
        hook.write_text(script)
        hook.chmod(0o755)
    monitor = session / "monitor.sh"
    monitor.write_text(script)
    monitor.chmod(0o755)
    with open(session / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = {monitor}\n\thooksPath = {session / '.git' / 'hooks'}\n")


def test_no_hook_or_monitor_runs_through_any_session_operation(tmp_path: Path) -> None:
    marker = tmp_path / "hooks-ran"
    session = SessionRepo.create(tmp_path / "s", {"problem": "p"})
    _plant(session.path, marker)
    session = SessionRepo.open(session.path)
    sha = session.record_candidate(1, "v1\n", {"ok": True}, {}, "first")
    session.tag_accepted(sha, "p-best")
    (session.path / "kernel.py").write_text("edited without a commit\n")
    assert "kernel.py" in discard_uncommitted(session)  # a checkout of HEAD's kernel.py
    session.record_candidate(2, "v2\n", {}, {}, "second")
    assert [c.iteration for c in session.candidates()] == [1, 2] and session.diff(sha, "HEAD")
    assert not marker.exists(), marker.read_text()


def test_a_held_session_is_refused_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = SessionRepo.create(tmp_path / "s", {"problem": "silu_and_mul"})
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from aka_tui.record.recovery import lock_session; "
        f"lock_session(Path({str(session.path)!r})); print('held', flush=True); time.sleep(60)")],
        cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert main(["optimize", "--resume", str(session.path), "--device", "cpu", "--force"]) == 2
        err = capsys.readouterr().err.strip()
        assert "being run by another aka process" in err and len(err.splitlines()) == 1
    finally:
        holder.kill()
        holder.wait()


def test_two_processes_taking_one_session_at_the_same_instant_get_it_once(tmp_path: Path) -> None:
    session = SessionRepo.create(tmp_path / "s", {"problem": "p"})
    go = tmp_path / "go"
    code = ("import os, sys, time; from pathlib import Path\n"
            "from aka_tui.errors import AkaError\nfrom aka_tui.record.recovery import lock_session\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.001)\n"
            f"try:\n    lock_session(Path({str(session.path)!r}))\nexcept AkaError:\n    print('refused')\n"
            "else:\n    print('won', flush=True); time.sleep(2)\n")
    racers = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)}) for _ in range(4)]
    time.sleep(1.5)  # all four are importing / waiting for the start signal
    go.write_text("")
    outputs = sorted(r.communicate(timeout=60)[0].strip() for r in racers)
    assert outputs == ["refused", "refused", "refused", "won"]


def test_the_lock_is_released_for_the_next_run_in_the_same_process(tmp_path: Path) -> None:
    session = SessionRepo.create(tmp_path / "s", {"problem": "p"})
    claim(session)
    unlock_session(session.path)
    lock_session(session.path)  # taken again, no error
    unlock_session(session.path)
