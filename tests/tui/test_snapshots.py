"""Pictures of the main screens (fixed size; content from the shipped suite and example sessions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka_tui.tui.app import AkaApp
from aka_tui.tui.app_data import AppPaths
from aka_tui.tui.config import TuiConfig
from tests.conftest import PROBLEMS, REPO
from tests.tui.conftest import EXAMPLES, SIZE, wait_for, wait_loaded

FIXED_CONFIG = Path("/nonexistent/aka-snapshot/config.json")


def _app() -> AkaApp:
    paths = AppPaths(PROBLEMS, Path("/nonexistent/aka-snapshot/sessions"), EXAMPLES, [], REPO / "kb")
    return AkaApp(paths=paths, config=TuiConfig(), config_path=FIXED_CONFIG)


def test_problems_screen(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZE, run_before=wait_loaded)


def test_replay_screen(snap_compare: Any) -> None:
    async def open_example(pilot: Any) -> None:
        await wait_loaded(pilot)
        pilot.app.open_replay(EXAMPLES / "rms_norm-example")
        await wait_for(pilot, lambda: len(getattr(pilot.app.screen, "views", [])) == 3, timeout_s=30)
        await pilot.press("right")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=SIZE, run_before=open_example)


def test_settings_screen(snap_compare: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    async def open_settings(pilot: Any) -> None:
        await wait_loaded(pilot)
        pilot.app.switch_mode("settings")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=SIZE, run_before=open_settings)


def test_help_screen(snap_compare: Any) -> None:
    async def open_help(pilot: Any) -> None:
        await wait_loaded(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=SIZE, run_before=open_help)
