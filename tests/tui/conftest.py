"""Fixtures for the app's tests: an app on the shipped suite with private sessions, config and knowledge base."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from aka_tui.tui.app import AkaApp
from aka_tui.tui.app_data import AppPaths
from aka_tui.tui.config import TuiConfig
from tests.conftest import PROBLEMS, REPO

EXAMPLES = REPO / "sessions" / "examples"
SIZE = (160, 48)


@pytest.fixture(autouse=True)
def _no_personal_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their editor: a developer's $VISUAL / $EDITOR must not open."""
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)


@pytest.fixture
def app_paths(tmp_path: Path) -> AppPaths:
    """The shipped suite and examples; sessions, reports and the knowledge base private to the test."""
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "kb", kb)
    return AppPaths(PROBLEMS, tmp_path / "sessions", EXAMPLES, [tmp_path / "reports"], kb)


@pytest.fixture
def make_app(app_paths: AppPaths, tmp_path: Path) -> Any:
    def make(**config: Any) -> AkaApp:
        app = AkaApp(paths=app_paths, config=TuiConfig(**config), config_path=tmp_path / "config.json")
        return app

    return make


async def wait_loaded(pilot: Any, timeout_s: float = 60.0) -> None:
    """Until the suite has loaded (torch import and 22 problems: a few seconds on 2 cores, longer while another
    test worker shares them)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if pilot.app.data is not None or pilot.app.load_error:
            await pilot.pause()
            return
    raise AssertionError("the suite did not load")


async def wait_for(pilot: Any, condition: Any, timeout_s: float = 120.0, step_s: float = 0.2) -> None:
    """Poll until `condition()` is true (the UI keeps running meanwhile), then let the UI take the messages posted
    until then: the loop's thread posts each iteration to the screen and then ends its run, so a condition on the
    runner can hold before the screen has shown the run's last iteration."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await pilot.pause(step_s)
        if condition():
            await pilot.pause()
            return
    raise AssertionError(f"condition not met within {timeout_s} s")
