"""Keyboard-only use (Replay tabs, the palette's actions, the sort indicator) and data that refreshes while
the app runs (recorded sessions, knowledge-base entries added on disk), plus the knowledge editor's checks."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Tabs

from tests.tui.conftest import EXAMPLES, SIZE, wait_for, wait_loaded


@pytest.mark.asyncio
async def test_replay_tabs_are_reached_by_keys_alone(make_app: Any) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("replay")
        await pilot.pause()
        screen = app.screen
        await wait_for(pilot, lambda: screen.query_one("#replay-sessions", DataTable).row_count >= 2, timeout_s=20)
        sessions = screen.query_one("#replay-sessions", DataTable)
        keys = [sessions.coordinate_to_cell_key((row, 0)).row_key.value for row in range(sessions.row_count)]
        for _ in range(keys.index(str(EXAMPLES / "rms_norm-example"))):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(screen.views) == 3, timeout_s=30)
        tabs = screen.query_one("#code-tabs")
        assert tabs.active == "tab-source"
        await pilot.press("t")
        assert tabs.active == "tab-diff"
        await pilot.press("right")  # the iteration list has focus: right steps
        assert screen.position == 1 and tabs.active == "tab-diff"
        for _ in range(12):  # tab moves the focus to the tab bar
            if isinstance(app.focused, Tabs):
                break
            await pilot.press("tab")
        assert isinstance(app.focused, Tabs)
        await pilot.press("right")  # now right switches the tab and leaves the iteration alone
        await pilot.pause()
        assert tabs.active == "tab-side" and screen.position == 1
        await pilot.press("right", "right")
        await pilot.pause()
        assert tabs.active in ("tab-decision", "tab-plot") and screen.position == 1
        await pilot.press("i", "right")  # back to the iteration list: right steps again
        assert screen.position == 2
        lines = [str(part) for part in screen.query_one("#rationale").content.renderables]
        assert lines[0].startswith("Path: ")  # which path produced the candidate, as recorded
        assert any(line.startswith("Decision: rejected") for line in lines), lines


@pytest.mark.asyncio
async def test_the_palette_offers_the_screens_actions(make_app: Any) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.open_session("rms_norm")
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"accept")
        await pilot.pause(0.5)
        from textual.command import CommandList

        options = app.screen.query_one(CommandList)
        prompts = [str(options.get_option_at_index(i).prompt).split("\n")[0] for i in range(options.option_count)]
        assert "Session: Accept (a)" in prompts
        await pilot.press("escape")
        await pilot.press("ctrl+p", *"continue a recorded")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ReplayScreen"
        assert app.focused is app.screen.query_one("#replay-sessions")


@pytest.mark.asyncio
async def test_the_sorted_column_is_marked(make_app: Any) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        table = app.screen.query_one("#problems-table", DataTable)
        labels = [str(c.label).strip() for c in table.ordered_columns]
        assert labels[3] == "weight % ▼"
        await pilot.press("s")
        labels = [str(c.label).strip() for c in table.ordered_columns]
        assert labels[4] == "shapes s/f ▲" and labels[3] == "weight %"
        assert table.ordered_columns[0].content_width >= max(len(op) for op in app.data.problems)  # not squeezed


@pytest.mark.asyncio
async def test_sessions_recorded_elsewhere_appear_while_the_app_runs(make_app: Any, app_paths: Any) -> None:
    app = make_app()
    app.records_poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("replay")
        await pilot.pause()
        sessions = app.screen.query_one("#replay-sessions", DataTable)
        before = sessions.row_count
        new = Path(app_paths.sessions_dir) / "silu_and_mul-recorded-meanwhile"
        shutil.copytree(EXAMPLES / "silu_and_mul-example", new, ignore=shutil.ignore_patterns("history.bundle"))
        await wait_for(pilot, lambda: sessions.row_count == before + 1, timeout_s=15)
        assert str(new) in [sessions.coordinate_to_cell_key((r, 0)).row_key.value for r in range(sessions.row_count)]
        assert any(s.path == new for s in app.data.records.sessions_of("silu_and_mul"))


def _pending_entry(kb_dir: Path, entry_id: str) -> str:
    text = next((kb_dir / "dsl").glob("*.md")).read_text()
    return (text.replace('status = "accepted"', "").replace("id = ", f'id = "{entry_id}"\n#', 1)
            .replace('layer = "dsl"', 'layer = "experience"'))


@pytest.mark.asyncio
async def test_entries_added_on_disk_appear_and_the_template_is_not_an_entry(make_app: Any, app_paths: Any) -> None:
    kb_dir = Path(app_paths.kb_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("knowledge")
        await pilot.pause()
        screen = app.screen
        pending = kb_dir / "pending" / "exp-added-meanwhile.md"
        pending.parent.mkdir(parents=True, exist_ok=True)
        pending.write_text(_pending_entry(kb_dir, "exp-added-meanwhile"))  # what `aka kb add --pending` writes
        await wait_for(pilot, lambda: "exp-added-meanwhile" in screen.kb.pending, timeout_s=15)

        await pilot.press("a")  # the template, saved as it is: refused with a message
        await pilot.pause()
        editor = app.screen
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "the template's id, title, body are still there" in str(editor.query_one("#editor-message").content)
        await pilot.press("escape")
        await pilot.pause()

        screen.show_entry("exp-added-meanwhile")
        await pilot.press("n")  # reject it, then delete an accepted entry that git never had
        await pilot.pause()
        untracked = kb_dir / "dsl" / "tui-untracked.md"
        untracked.write_text(_pending_entry(kb_dir, "tui-untracked").replace('"experience"', '"dsl"')
                             + "\n")
        await wait_for(pilot, lambda: "tui-untracked" in screen.kb.entries, timeout_s=15)
        screen.show_entry("tui-untracked")
        await pilot.press("d")
        await pilot.pause()
        question = str(app.screen.query_one("Label").content)
        assert "it is not in git, so this cannot be undone" in question and "keeps its history" not in question
        await pilot.press("n")


EDITOR_SCRIPT = """#!/bin/bash
# Replaces the template's placeholders, as a person would in their editor.
sed -i -e 's/my-new-entry/tui-editor-entry/' -e 's/What this entry teaches, in one line/Written in my editor/' \\
    -e 's/The body: what to do, why it helps, and how to check it./A body written outside the app./' "$1"
"""


@pytest.mark.asyncio
async def test_an_entry_written_in_the_editor_is_added(make_app: Any, app_paths: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """$EDITOR runs for real on the entry's text; the headless test driver cannot suspend, so the app's
    suspend is a no-op context here (the tmux journey in docs/tui.md covers the real suspend)."""
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR_SCRIPT)
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app()
    monkeypatch.setattr(type(app), "suspend", lambda self: contextlib.nullcontext())
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.switch_mode("knowledge")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert "tui-editor-entry" in screen.kb.entries
        assert (Path(app_paths.kb_dir) / "dsl" / "tui-editor-entry.md").read_text().count("Written in my editor") == 1
