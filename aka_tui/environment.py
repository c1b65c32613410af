"""The process environment as a child process should get it, read safely while other threads change it."""

from __future__ import annotations

import os


def environment_snapshot() -> dict[str, str]:
    """A copy of os.environ that another thread's setenv/unsetenv cannot break: `dict(os.environ)` lists the
    keys, then reads each, and raises KeyError when one is removed in between (evaluations run on threads while
    their caller changes the environment: a test runner sets and removes PYTEST_CURRENT_TEST around each test).
    Pass it as `env=` to a process started while other threads run: with env=None the child reads the C
    environ, which another thread's setenv may be reallocating (exec then fails with EFAULT, "Bad address")."""
    for _ in range(100):
        try:
            return dict(os.environ)
        except (KeyError, RuntimeError):
            continue
    return {k: v for k in list(os.environ) if (v := os.environ.get(k)) is not None}
