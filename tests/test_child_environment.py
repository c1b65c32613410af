"""Processes started while another thread changes the environment still start.

With env=None a child's exec reads the process's C environ, which a setenv on another thread may be reallocating
at that moment (exec fails with EFAULT, "Bad address": it ended a CI run). Processes the app starts from its
threads get a copy (aka_tui.environment.environment_snapshot)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from aka_tui.tui.screens.knowledge import tracked_by_git

REPO = Path(__file__).resolve().parents[1]


def test_git_lookups_start_while_another_thread_changes_the_environment() -> None:
    answers: list[bool] = []

    def look() -> None:
        answers.extend(tracked_by_git(REPO / "README.md") for _ in range(60))

    lookers = [threading.Thread(target=look) for _ in range(2)]
    for thread in lookers:
        thread.start()
    step = 0
    while any(thread.is_alive() for thread in lookers):  # what a test runner or a lazy import does meanwhile
        os.environ[f"AKA_TEST_CHURN_{step % 64}"] = "x" * (step % 40)
        if step % 3 == 0:
            os.environ.pop(f"AKA_TEST_CHURN_{(step * 7) % 64}", None)
        step += 1
    for name in [n for n in os.environ if n.startswith("AKA_TEST_CHURN_")]:
        os.environ.pop(name, None)
    assert answers == [True] * 120
