"""Editing text (in $VISUAL / $EDITOR with the app suspended, or in the in-app editor) and exporting a
recorded kernel with the same provenance header as `aka export`. Used by Session, Replay and Knowledge."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from aka_tui.environment import environment_snapshot
from aka_tui.tui.screens.dialogs import Confirm, PathPrompt, TextEditor

Validate = Callable[[str], str]


def editor_command(environ: dict[str, str] | None = None) -> list[str] | None:
    """The person's editor ($VISUAL, else $EDITOR) as a command, or None when neither is set."""
    env = environ if environ is not None else os.environ
    for name in ("VISUAL", "EDITOR"):
        if env.get(name, "").strip():
            return shlex.split(env[name])
    return None


def run_external_editor(app: Any, command: list[str], text: str, suffix: str) -> str:
    """Write `text` to a temporary file, run the editor on it with the app suspended, return what it saved."""
    with tempfile.NamedTemporaryFile("w", suffix=suffix, prefix="aka-edit-", delete=False) as handle:
        handle.write(text)
        path = Path(handle.name)
    try:
        with app.suspend():
            # the agent's threads go on while the app is suspended: the editor gets a copy of the environment
            subprocess.run([*command, str(path)], check=False, env=environment_snapshot())
        return path.read_text(encoding="utf-8", errors="replace")  # bytes that are not UTF-8 show as U+FFFD
    finally:
        path.unlink(missing_ok=True)


def edit_text(app: Any, title: str, text: str, validate: Validate, done: Callable[[str | None], None],
              suffix: str = ".py") -> None:
    """Edit `text`, then call `done` with the valid result (None: cancelled or unchanged).

    With Settings → editor "external" and $VISUAL/$EDITOR set, the app is suspended while that editor runs;
    text it saved that does not validate opens in the in-app editor with the message, so nothing is lost."""
    from textual.app import SuspendNotSupported

    command = editor_command() if getattr(app.config, "editor", "external") == "external" else None
    if command is not None:
        try:
            edited = run_external_editor(app, command, text, suffix)
        except (SuspendNotSupported, OSError) as exc:
            app.notify(f"cannot run {command[0]} here ({exc}); using the in-app editor", severity="warning")
        else:
            if edited == text:
                app.notify("no change saved in the editor")
                done(None)
                return
            message = validate(edited)
            if not message:
                done(edited)
                return
            app.push_screen(TextEditor(title, edited, validate, message), done)
            return
    app.push_screen(TextEditor(title, text, validate), done)


def export_recorded(app: Any, session_dir: Path, iteration: int, default_name: str,
                    on_written: Callable[[Path], None] | None = None) -> None:
    """Ask where to write a recorded iteration's kernel (with `aka export`'s provenance header); a missing
    directory is created only when confirmed, an existing file is replaced only when confirmed."""

    def chosen(path: str | None) -> None:
        if not path:
            return
        target = Path(path).expanduser()
        if target.exists() and target.is_dir():
            app.show_error(f"{target} is a directory: give a file name", "export")
            return
        if not target.parent.is_dir():
            app.push_screen(Confirm(f"{target.parent} does not exist. Create it and write {target.name}?"),
                            lambda yes: write(target, True) if yes else None)
        elif target.exists():
            app.push_screen(Confirm(f"{target} exists. Replace it?"), lambda yes: write(target) if yes else None)
        else:
            write(target)

    def write(target: Path, make_parent: bool = False) -> None:
        from aka_tui.agent.session_commands import export_text
        from aka_tui.record.history import exported_step, read_steps
        from aka_tui.record.session_repo import read_meta

        try:
            steps, _problems = read_steps(session_dir)
            text = export_text(session_dir.name, read_meta(session_dir), exported_step(steps, iteration))
            if make_parent:
                target.parent.mkdir(parents=True)
            target.write_text(text)
        except Exception as exc:  # OSError, SessionError: one line, nothing written
            app.show_error(exc if not isinstance(exc, OSError) else f"cannot write {target}: {exc}", "export failed")
            return
        app.notify(f"wrote {target} (provenance header + the recorded kernel)")
        if on_written is not None:
            on_written(target)

    app.push_screen(PathPrompt(f"Export iteration {iteration}'s kernel to:", default_name), chosen)
