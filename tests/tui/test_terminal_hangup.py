"""The app exits when its terminal goes away (a closed window, a killed tmux pane), instead of spinning on it."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

from tests.conftest import REPO


def read_until(fd: int, needle: bytes, timeout_s: float) -> bytes:
    """What the app drew on the terminal until `needle` appeared (or the time ran out)."""
    seen = b""
    deadline = time.monotonic() + timeout_s
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


def test_app_exits_when_its_terminal_hangs_up(tmp_path) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40", "HOME": str(tmp_path),
           "AKA_HOME": str(tmp_path / "aka")}
    app = subprocess.Popen([sys.executable, "-m", "aka_tui"], cwd=REPO, env=env, stdin=slave, stdout=slave,
                           stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        drawn = read_until(master, b"filter by op", timeout_s=90)
        assert b"filter by op" in drawn, f"the app did not draw its problem list: {drawn[-400:]!r}"
        # the suite loads on a worker thread that exit waits for (it imports torch: 20 s and more on a loaded
        # 2-core machine), so hang up once the list is filled: what is timed below is the hang-up alone
        drawn += read_until(master, b"rms_norm", timeout_s=120)
        assert b"rms_norm" in drawn, f"the app did not list the suite: {drawn[-400:]!r}"
        os.close(master)  # the terminal goes away; the session gets no SIGHUP (as under `make run` in tmux)
        master = -1
        try:
            code = app.wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError("the app kept running 20 s after its terminal hung up") from None
        assert code == 129
    finally:
        if master >= 0:
            os.close(master)
        if app.poll() is None:
            app.kill()
            app.wait()
