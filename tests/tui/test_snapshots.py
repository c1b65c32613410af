"""Pictures of the main screens at 100x30 and 200x50 (content from the shipped suite and example sessions;
no timestamps, no machine paths)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aka_tui.tui.app import AkaApp
from aka_tui.tui.app_data import AppPaths
from aka_tui.tui.config import TuiConfig
from tests.conftest import PROBLEMS, REPO
from tests.tui.conftest import EXAMPLES, wait_for, wait_loaded

FIXED_CONFIG = Path("/nonexistent/aka-snapshot/config.json")
SIZES = pytest.mark.parametrize("size", [(100, 30), (200, 50)], ids=["100x30", "200x50"])


@pytest.fixture(autouse=True)
def _no_key_no_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "VISUAL", "EDITOR"):
        monkeypatch.delenv(name, raising=False)


def _app() -> AkaApp:
    paths = AppPaths(PROBLEMS, Path("/nonexistent/aka-snapshot/sessions"), EXAMPLES, [], REPO / "kb")
    return AkaApp(paths=paths, config=TuiConfig(), config_path=FIXED_CONFIG)


@SIZES
def test_problems_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(_app(), terminal_size=size, run_before=wait_loaded)


@SIZES
def test_session_screen_with_iterations(snap_compare: Any, size: tuple[int, int]) -> None:
    async def show_recorded(pilot: Any) -> None:
        await wait_loaded(pilot)
        pilot.app.continue_session(EXAMPLES / "rms_norm-example", "rms_norm")
        await wait_for(pilot, lambda: len(getattr(pilot.app.screen, "views", [])) == 3, timeout_s=30)
        # the iteration table sizes its columns as its rows and its container's width settle: under a loaded
        # CI machine one layout pass was pictured with the columns cut short
        await pilot.wait_for_scheduled_animations()
        for _ in range(3):
            await pilot.pause(0.1)

    assert snap_compare(_app(), terminal_size=size, run_before=show_recorded)


@SIZES
def test_replay_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    async def open_example(pilot: Any) -> None:
        await wait_loaded(pilot)
        pilot.app.open_replay(EXAMPLES / "rms_norm-example")
        await wait_for(pilot, lambda: len(getattr(pilot.app.screen, "views", [])) == 3, timeout_s=30)
        await pilot.press("right")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=size, run_before=open_example)


@SIZES
def test_settings_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    async def open_settings(pilot: Any) -> None:
        await wait_loaded(pilot)
        pilot.app.switch_mode("settings")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=size, run_before=open_settings)


def test_help_screen(snap_compare: Any) -> None:
    async def open_help(pilot: Any) -> None:
        await wait_loaded(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=(100, 30), run_before=open_help)
