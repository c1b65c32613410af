"""The Session screen's status tells the truth: pause → paused only when the loop holds, a proposer error is an
error state (and leaves no empty session), Settings are applied or declared not applied on continue, and a
recorded session continues from Replay. Real loops on the CPU interpreter, kept to one iteration each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tui.conftest import EXAMPLES, SIZE, wait_for, wait_loaded

FAST = {"use_kb": False, "fuzz": 0, "cases": 1, "tier": "smoke"}


def _status(screen: Any) -> str:
    return str(screen.query_one("#session-status").content)


def _log(screen: Any) -> str:
    """The agent log as one line (the log wraps long lines at word boundaries)."""
    return " ".join(str(line.text).strip() for line in screen.query_one("#agent-log").lines)


async def _open(pilot: Any, problem: str) -> Any:
    await wait_loaded(pilot)
    pilot.app.open_session(problem)
    await pilot.pause()
    return pilot.app.screen


@pytest.mark.slow
@pytest.mark.asyncio
async def test_pause_holds_the_loop_and_settings_are_applied_or_declared_on_continue(make_app: Any) -> None:
    app = make_app(iterations=1, remeasure_rounds=0)
    app.session_overrides = dict(FAST)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, "silu_and_mul")
        await pilot.press("s", "space")  # pause requested before the first boundary
        assert "pauses after the baseline" in _status(screen) or "pausing" in _status(screen)
        await wait_for(pilot, lambda: screen.runner.phase == "paused")
        assert "paused after the baseline (space resumes)" in _status(screen)
        await pilot.pause(1.0)
        assert screen.runner.phase == "paused" and not screen.views  # held: nothing evaluated meanwhile
        await pilot.press("space")
        # the runner's phase changes before its message reaches the screen: wait for the screen to show it
        await wait_for(pilot, lambda: screen.runner.phase == "finished" and "finished" in _status(screen))
        assert len(screen.views) == 1 and "finished: iteration budget spent" in _status(screen)

        app.switch_mode("settings")  # through the form, as a person would
        await pilot.pause()
        settings = app.screen
        settings.query_one("#dropout_p").value = "0.25"
        settings.query_one("#proposer").value = "anthropic"
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.switch_mode("session")
        await pilot.pause()
        assert "continuing applies dropout_p 0.5 → 0.25" in _status(screen)
        assert "not applied to this session: proposer anthropic (this session: offline)" in _status(screen)
        await pilot.press("s")
        await pilot.pause()
        assert "proposer offline" in _status(screen) and "dropout 0.25" in _status(screen)
        await wait_for(pilot, lambda: screen.runner.phase == "finished")
        assert "not applied to this session: proposer anthropic" in _log(screen)
        assert screen.runner.loop.config.dropout_p == 0.25
        assert len(screen.views) == 2
        proposal = json.loads((screen.runner.session.path / "iterations" / "0002" / "proposal.json").read_text())
        assert proposal["proposer"] == "offline"


@pytest.mark.asyncio
async def test_a_key_that_is_not_an_anthropic_key_is_an_error_state(make_app: Any, app_paths: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-key")
    app = make_app(iterations=1, proposer="anthropic")
    app.session_overrides = dict(FAST)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, "silu_and_mul")
        await pilot.press("s")
        await wait_for(pilot, lambda: screen.runner.phase == "error", timeout_s=60)
        await pilot.pause()
        status = _status(screen)
        assert "error: proposer error: ANTHROPIC_API_KEY does not look like an Anthropic key" in status
        assert "offline proposer in Settings (F6)" in status and "--proposer" not in status
        assert "starting" not in status
        assert not Path(app_paths.sessions_dir).exists() or not any(Path(app_paths.sessions_dir).iterdir())


class RejectedKeyProposer:
    """Fails on its first call the way the Anthropic proposer does when the API rejects the key."""

    name = "anthropic"

    def tactics(self) -> list[str]:
        return []

    def first(self) -> Any:
        from aka_tui.errors import ProposerError

        raise ProposerError("the API key was rejected (invalid or revoked); check ANTHROPIC_API_KEY, or use "
                            "--proposer offline")

    propose = first


@pytest.mark.asyncio
async def test_a_proposer_failing_after_the_baseline_leaves_no_empty_session(make_app: Any, app_paths: Any) -> None:
    app = make_app(iterations=1)
    app.session_overrides = dict(FAST)
    app.proposer_factory = lambda settings, problem, profile: RejectedKeyProposer()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, "silu_and_mul")
        await pilot.press("s")
        await wait_for(pilot, lambda: screen.runner.phase == "error")
        await pilot.pause()
        assert "the offline proposer (Settings, F6)" in _status(screen)
        assert "removed" in _log(screen) and "it had recorded no candidate" in _log(screen)
        assert not any(Path(app_paths.sessions_dir).iterdir())  # nothing "unfinished" left behind


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_shipped_session_continues_from_replay(make_app: Any, app_paths: Any) -> None:
    app = make_app(iterations=1, remeasure_rounds=0)
    app.session_overrides = dict(FAST)
    example = EXAMPLES / "rms_norm-example"
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.open_replay(example)
        replay = app.screen
        await wait_for(pilot, lambda: len(replay.views) == 3, timeout_s=30)
        await pilot.press("c")  # continue here
        await wait_for(pilot, lambda: type(app.screen).__name__ == "SessionScreen" and len(app.screen.views) == 3)
        screen = app.screen
        assert "recorded example, 3 iterations (s continues a copy of it here)" in _status(screen)
        await pilot.press("s")  # the example was recorded for an older rms_norm: asked before continuing
        await wait_for(pilot, lambda: type(app.screen).__name__ == "Confirm", timeout_s=60)
        assert "changed since the session was recorded" in str(app.screen.query_one("Label").content)
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.runner is not None and screen.runner.phase == "finished")
        assert [v.iteration for v in screen.views] == [1, 2, 3, 4]
        copy = screen.runner.session.path
        assert copy.parent == Path(app_paths.sessions_dir) and copy.name.startswith("rms_norm-example-")
        assert (copy / "iterations" / "0004" / "kernel.py").is_file()
        assert not (example / "iterations" / "0004").exists()  # the shipped example is untouched
        assert [c.iteration for c in screen.runner.session.candidates()] == [1, 2, 3, 4]  # a commit in the copy
        assert "a shipped example continues in a copy" in _log(screen)
