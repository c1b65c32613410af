"""Replay of a shipped session, knowledge curation, settings persistence, and `aka` opening the app."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from aka_tui.tui.app import AkaApp
from aka_tui.tui.config import TuiConfig
from tests.tui.conftest import EXAMPLES, SIZE, wait_for, wait_loaded


@pytest.mark.asyncio
async def test_replay_steps_through_a_shipped_session(make_app: Any) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.open_replay(EXAMPLES / "rms_norm-example")
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.views) == 3, timeout_s=30)
        assert screen.position == 0
        await pilot.press("right")
        await pilot.pause()
        assert screen.position == 1
        await pilot.press("end")
        await pilot.pause()
        assert screen.position == 2
        await pilot.press("left")
        await pilot.pause()
        assert screen.position == 1
        await pilot.press("home")
        await pilot.pause()
        assert screen.position == 0
        assert "1/3" in str(screen.query_one("#scrub").content)
        assert [v.accepted for v in screen.views] == [True, True, False]
        assert "iteration 1" in str(screen.query_one("#metrics").content.renderables[0])
        sessions = screen.query_one("#replay-sessions", DataTable)
        assert sessions.row_count >= 2  # both shipped examples


@pytest.mark.asyncio
async def test_add_validates_and_reject_keeps_the_entry(make_app: Any, app_paths: Any) -> None:
    kb_dir = Path(app_paths.kb_dir)
    pending = kb_dir / "pending" / "exp-test-proposal.md"
    pending.parent.mkdir(parents=True, exist_ok=True)
    pending.write_text((kb_dir / "dsl").glob("*.md").__next__().read_text().replace("status = \"accepted\"", "")
                       .replace("id = ", "id = \"exp-test-proposal\"\n#", 1).replace("layer = \"dsl\"",
                                                                                      "layer = \"experience\""))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("knowledge")
        await pilot.pause()
        screen = app.screen
        assert "exp-test-proposal" in screen.kb.pending, screen.kb.errors
        await pilot.press("a")
        await pilot.pause()
        editor = app.screen
        area = editor.query_one("#editor-area")
        area.text = area.text.replace('kind = "technique"', 'kind = "wisdom"')
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "kind" in str(editor.query_one("#editor-message").content)  # the validation message, still open
        area.text = (area.text.replace('kind = "wisdom"', 'kind = "technique"').replace("my-new-entry", "tui-test-entry")
                     .replace("What this entry teaches, in one line", "A test entry")
                     .replace("The body: what to do, why it helps, and how to check it.", "Its body."))
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert (kb_dir / "dsl" / "tui-test-entry.md").is_file()
        assert "tui-test-entry" in screen.kb.entries

        screen.show_entry("exp-test-proposal")
        await pilot.press("n")  # reject
        await pilot.pause()
        assert not pending.exists() and (kb_dir / "pending" / "rejected" / "exp-test-proposal.md").is_file()
        assert "exp-test-proposal" not in screen.kb.pending

        screen.show_entry("tui-test-entry")
        await pilot.press("d", "y")  # delete, confirmed
        await pilot.pause()
        assert not (kb_dir / "dsl" / "tui-test-entry.md").exists()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_knowledge_search_returns_entries(app_paths: Any, shipped_kb_index: Any, tmp_path: Path) -> None:
    # The shipped knowledge base, read only (a search writes nothing to it); its index was synced by the fixture,
    # so the search's own sync finds every entry unchanged and embeds only the query.
    paths = replace(app_paths, kb_dir=shipped_kb_index.kb_root)
    app = AkaApp(paths=paths, config=TuiConfig(), config_path=tmp_path / "config.json")
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("knowledge")
        await pilot.pause()
        screen = app.screen
        await pilot.press("slash", *"rms_norm far below copy bandwidth", "enter")
        results = screen.query_one("#kb-search-results", DataTable)
        await wait_for(pilot, lambda: results.row_count > 0, timeout_s=300)
        ids = [results.get_row_at(i)[2] for i in range(results.row_count)]
        assert any("norm" in i for i in ids)


@pytest.mark.asyncio
async def test_settings_persist_and_the_key_is_never_written(make_app: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-api03-" + "x" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("settings")
        await pilot.pause()
        screen = app.screen
        assert "present" in str(screen.query_one("#key-status").content)
        screen.query_one("#iterations").value = "7"
        screen.query_one("#dropout_p").value = "0.25"
        screen.query_one("#remeasure_rounds").value = "1"
        await pilot.press("ctrl+s")
        await pilot.pause()
        screen.query_one("#dropout_p").value = "1.5"
        await pilot.press("ctrl+s")  # refused: the file keeps the valid values
        await pilot.pause()
        assert "dropout" in str(screen.query_one("#settings-message").content)
    text = (tmp_path / "config.json").read_text()
    saved = json.loads(text)
    assert saved["iterations"] == 7 and saved["dropout_p"] == 0.25 and saved["remeasure_rounds"] == 1
    assert secret not in text and "sk-ant" not in text
    reopened = AkaApp(config_path=tmp_path / "config.json")
    assert reopened.config.iterations == 7
    from types import SimpleNamespace

    from aka_tui.tui.screens.session import settings_from_config

    app_like = SimpleNamespace(config=reopened.config, session_overrides={},
                               paths=SimpleNamespace(suite_dir=tmp_path, sessions_dir=tmp_path))
    assert settings_from_config(app_like, "rms_norm").remeasure_rounds == 1  # what the live session's loop gets


def test_key_status() -> None:
    from aka_tui.tui.config import api_key_status

    assert api_key_status({}) == "absent"
    assert api_key_status({"ANTHROPIC_API_KEY": "hello"}) == "invalid"
    assert api_key_status({"ANTHROPIC_API_KEY": "sk-ant-api03-" + "a" * 30}) == "present"


def test_aka_without_arguments_builds_the_app() -> None:
    from aka_tui.cli import main

    built: list[Any] = []
    assert main([], run=lambda app: built.append(app) or 0) == 0
    assert isinstance(built[0], AkaApp)


def test_unreadable_config_gives_defaults_and_a_warning(tmp_path: Path) -> None:
    from aka_tui.tui.config import load_config

    path = tmp_path / "config.json"
    path.write_text("{not json")
    config, warning = load_config(path)
    assert config.iterations == 4 and "unreadable" in warning


@pytest.mark.asyncio
async def test_remeasure_shows_recorded_against_here(make_app: Any) -> None:
    app = make_app(tier="smoke", cases=1)
    app.session_overrides = {"remeasure_options": {"fuzz": 0, "cpu_reps": 1, "input_sets": 1}}
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.open_replay(EXAMPLES / "rms_norm-example")
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.views) == 3, timeout_s=30)
        await pilot.press("right", "m")  # iteration 2, re-measured on this machine
        tabs = screen.query_one("#code-tabs")
        await wait_for(pilot, lambda: tabs.active == "tab-here", timeout_s=120)
        text = str(screen.query_one("#here-vs-recorded").content.renderables[0])
        assert "iteration 2 re-measured here (not recorded)" in text and "recorded S_op 0.0006089 on cpu" in text
        table = screen.query_one("#here-vs-recorded").content.renderables[1]
        headers = [c.header for c in table.columns]
        assert headers[:4] == ["shape", "T µs rec.", "T µs here", "here/rec."]  # kept first at any width
        notes = " ".join(str(r) for r in screen.query_one("#here-vs-recorded").content.renderables[2:])
        assert "p20–p80 here" in headers or "p20–p80 here" in notes  # shown, or listed as left out
        assert table.row_count == len(screen.views[1].shapes)
        await pilot.press("right")  # another iteration: the comparison belongs to iteration 2 only
        assert tabs.active != "tab-here"
