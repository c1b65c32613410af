"""The aka app: screens as modes, bindings, the command palette and error routing. No business logic."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.worker import Worker, WorkerState

from aka_tui.tui.app_data import AppData, AppPaths, load_app_data, records_signature
from aka_tui.tui.config import TuiConfig, load_config
from aka_tui.tui.error_lines import error_text

__all__ = ["AkaApp", "error_text", "run_app"]
RECORDS_POLL_S = 2.0  # how often the sessions and reports directories are checked for new records
TERMINAL_CHECK_S = 1.0  # how often the app checks that its terminal is still there

STARTED = time.monotonic()


def process_age_s() -> float | None:
    """Seconds since this process started (Linux /proc), for the first-paint measurement."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
        return uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _screen(module: str, name: str) -> Any:
    """A screen instance, its module imported on first use (keeps start-up light)."""
    import importlib

    return getattr(importlib.import_module(f"aka_tui.tui.screens.{module}"), name)()


def _screen_commands(app: AkaApp, screen: Any) -> list[tuple[str, Callable[[], Any], str]]:
    """The actions of the screen the palette was opened on (its bindings), named "Screen: Action (key)"."""
    area = type(screen).__name__.removesuffix("Screen") or "Screen"
    commands: list[tuple[str, Callable[[], Any], str]] = []
    for binding in getattr(screen, "BINDINGS", []):
        if not isinstance(binding, Binding) or not binding.description:
            continue
        action = binding.action

        def run(action: str = action, screen: Any = screen) -> None:
            app.call_later(screen.run_action, action)

        key = binding.key.split(",")[0]
        commands.append((f"{area}: {binding.description} ({key})", run, f"the {key} key on this screen"))
    return commands


class AkaCommands(Provider):
    """Command palette: the shown screen's actions, screens, knowledge search, resuming a recorded session
    and "Optimize <op>" for every problem."""

    async def search(self, query: str) -> Hits:
        app = self.app
        assert isinstance(app, AkaApp)
        matcher = self.matcher(query)
        commands = _screen_commands(app, self.screen)
        commands += [(f"Go to {mode}", partial(app.switch_mode, mode), f"open the {mode} screen") for mode in app.MODES]
        commands += [("Help", app.action_help, "keys and screens"),
                     ("Search the knowledge base", app.search_knowledge, "Knowledge screen, search box"),
                     ("Continue a recorded session", app.pick_session_to_continue,
                      "Replay screen: pick a session, then c continues it here")]
        if app.data is not None:
            for name in sorted(app.data.problems):
                commands.append((f"Optimize {name}", partial(app.open_session, name), "open a live session"))
        for text, callback, help_text in commands:
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)


class AkaApp(App[None]):
    """Pick an operator, watch the agent live, accept or edit kernels, replay sessions, curate knowledge."""

    TITLE = "aka"
    SUB_TITLE = "kernels against the roofline"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {AkaCommands}
    MODES = {
        "problems": lambda: _screen("problems", "ProblemsScreen"),
        "session": lambda: _screen("session", "SessionScreen"),
        "replay": lambda: _screen("replay", "ReplayScreen"),
        "knowledge": lambda: _screen("knowledge", "KnowledgeScreen"),
        "settings": lambda: _screen("settings", "SettingsScreen"),
    }
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("f2", "switch_mode('problems')", "Problems", id="app.problems", show=False),
        Binding("f3", "switch_mode('session')", "Session", id="app.session", show=False),
        Binding("f4", "switch_mode('replay')", "Replay", id="app.replay", show=False),
        Binding("f5", "switch_mode('knowledge')", "Knowledge", id="app.knowledge", show=False),
        Binding("f6", "switch_mode('settings')", "Settings", id="app.settings", show=False),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    def __init__(self, paths: AppPaths | None = None, config: TuiConfig | None = None,
                 config_path: Path | None = None, suite_dir: Path | None = None) -> None:
        super().__init__()
        self.suite_dir = suite_dir  # `aka --suite DIR`: another suite (e.g. a published Atrex-Bench data directory)
        self.config_path = config_path
        loaded, warning = (config, "") if config is not None else load_config(config_path)
        self.config = loaded
        self.config_warning = warning
        self.paths = paths
        self.data: AppData | None = None
        self.load_error: str = ""
        self.current_problem: str | None = None
        self.first_paint_s: float | None = None
        self._ready_callbacks: list[Callable[[], None]] = []
        self._reload_callbacks: list[Callable[[], None]] = []
        self.replay_source: Path | None = None  # the session open on the Replay screen (replay proposer)
        self.proposer_factory: Any = None  # tests inject a proposer here
        self.session_overrides: dict[str, Any] = {}  # tests shrink evaluations here
        self.records_poll_s = RECORDS_POLL_S
        self._records_seen: Any = None

    # ----- start-up --------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.switch_mode("problems")

    def on_ready(self) -> None:
        """First paint is done: measure it, then load the suite (torch) in a thread, off the first paint's way."""
        self.first_paint_s = process_age_s() or (time.monotonic() - STARTED)
        if os.environ.get("AKA_FIRST_PAINT_EXIT"):
            cpu = os.times()
            self.exit(message=f"first paint {self.first_paint_s:.2f} s after the process started "
                              f"(CPU time {cpu.user + cpu.system:.2f} s)")
            return
        self.load_data()
        self.set_interval(self.records_poll_s, self.refresh_records_if_changed, name="records-poll")
        self._watch_terminal()
        if self.config_warning:
            self.notify(self.config_warning, title="settings", severity="warning", timeout=8)

    def _watch_terminal(self) -> None:
        """Exit when the terminal goes away (a closed window, a killed tmux pane): Textual's input thread would
        otherwise read end-of-file from the hung-up terminal in a loop, at most of a core, with no one to see it.
        A hang-up that reaches us as SIGHUP exits the same way, through `exit` (a running session stops at its
        next boundary; its records are written as it goes)."""
        if self.is_headless:
            return
        try:
            fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1
        except (OSError, ValueError):
            fd = -1
        if fd < 0 or not os.isatty(fd):
            return
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self._terminal_gone)

        def check() -> None:
            if not os.isatty(fd):  # a hung-up terminal fails tcgetattr with EIO
                self._terminal_gone()

        self.set_interval(TERMINAL_CHECK_S, check, name="terminal-watch")

    def _terminal_gone(self) -> None:
        """Stop a running session at its next boundary (what it recorded stays), then exit."""
        for stack in getattr(self, "_screen_stacks", {}).values():
            for screen in stack:
                runner = getattr(screen, "runner", None)
                if runner is not None and getattr(runner, "running", False):
                    runner.stop()
        self.exit(return_code=129)  # 128 + SIGHUP, as a shell reports a hang-up

    def load_data(self) -> None:
        """(Re)load suite, profile and records in a thread; screens get `when_ready` callbacks."""
        self.run_worker(self._load_data, thread=True, exclusive=True, group="load", exit_on_error=False,
                        name="load-suite")

    def _load_data(self) -> None:
        paths = self.paths or AppPaths.default(self.config, self.suite_dir)
        self.paths = paths
        try:
            data = load_app_data(self.config, paths)
        except Exception as exc:  # shown on the Problems screen and as a notification
            title, message = error_text(exc)
            self.call_from_thread(self._data_failed, f"{title}: {message}")
            return
        self.call_from_thread(self._data_loaded, data)

    def _data_failed(self, text: str) -> None:
        self.load_error = text
        self.notify(text, title="cannot load the suite", severity="error", timeout=15)
        self._run_ready_callbacks()

    def _data_loaded(self, data: AppData) -> None:
        self.data, self.load_error = data, ""
        self.sub_title = data.short_note()
        for name, error in data.load_errors.items():
            self.notify(f"{name}: {error}", title="problem skipped", severity="warning", timeout=10)
        self._run_ready_callbacks()

    def _run_ready_callbacks(self) -> None:
        callbacks, self._ready_callbacks = self._ready_callbacks, []
        for callback in callbacks + self._reload_callbacks:
            callback()

    def when_ready(self, callback: Callable[[], None], again: bool = False) -> None:
        """Call `callback` on the UI thread once the suite is loaded (now, if it already is). With `again`,
        also after every reload."""
        if again:
            self._reload_callbacks.append(callback)
        if self.data is not None or self.load_error:
            callback()
        elif not again:
            self._ready_callbacks.append(callback)

    # ----- records --------------------------------------------------------------------------------------
    def refresh_records(self) -> None:
        """Re-read the recorded sessions and reports in a thread; screens showing them refresh."""
        if self.data is not None and self.paths is not None:
            self.run_worker(self._reload_records, thread=True, exclusive=True, group="records",
                            exit_on_error=False, name="records")

    def refresh_records_if_changed(self) -> None:
        """Poll: reload the records when a session or report was added or written (by this app or another)."""
        if self.data is not None and self.paths is not None:
            self.run_worker(lambda: self._reload_records(only_if_changed=True), thread=True, exclusive=True,
                            group="records", exit_on_error=False, name="records-poll")

    def _reload_records(self, only_if_changed: bool = False) -> None:
        from aka_tui.tui.records import load_records

        paths = self.paths
        assert paths is not None
        seen = records_signature(paths)
        if only_if_changed and seen == self._records_seen:
            return
        records = load_records(paths.session_dirs(), paths.report_dirs, paths.suite_dir.name)
        self.call_from_thread(self._records_loaded, records, seen)

    def _records_loaded(self, records: Any, seen: Any) -> None:
        self._records_seen = seen
        if self.data is not None:
            self.data.records = records
            for callback in list(self._reload_callbacks):
                callback()

    # ----- navigation -----------------------------------------------------------------------------------
    def open_session(self, problem: str) -> None:
        self.current_problem = problem
        self.switch_mode("session")
        screen = self.screen
        if hasattr(screen, "set_problem"):
            screen.set_problem(problem)

    def open_replay(self, session_dir: Path) -> None:
        self.switch_mode("replay")
        screen = self.screen
        if hasattr(screen, "open_session_dir"):
            screen.open_session_dir(session_dir)

    def continue_session(self, session_dir: Path, problem: str) -> None:
        """Show a recorded session on the Session screen, ready to continue (s)."""
        self.current_problem = problem
        self.switch_mode("session")
        screen = self.screen
        if hasattr(screen, "show_recorded"):
            screen.show_recorded(session_dir, problem)

    def search_knowledge(self) -> None:
        self.switch_mode("knowledge")
        self.call_after_refresh(lambda: self.screen.run_action("focus_search"))

    def pick_session_to_continue(self) -> None:
        self.switch_mode("replay")
        self.call_after_refresh(lambda: self.screen.run_action("focus_sessions"))

    def action_help(self) -> None:
        from aka_tui.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    # ----- errors ---------------------------------------------------------------------------------------
    def show_error(self, error: BaseException | str, title: str = "error") -> None:
        if isinstance(error, BaseException):
            title, message = error_text(error)
        else:
            message = error
        self.notify(message, title=title, severity="error", timeout=12)

    def _handle_exception(self, error: Exception) -> None:
        """Interactive runs: a bug in a handler becomes a notification (traceback kept in a log file), not a
        crash; headless runs (tests) keep Textual's behaviour so bugs fail loudly."""
        if self.is_headless or not self.is_running:
            super()._handle_exception(error)
            return
        import traceback

        from aka_tui.paths import aka_home

        log = aka_home() / "tui-errors.log"
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(time.strftime("%Y-%m-%d %H:%M:%S ") + "".join(traceback.format_exception(error)) + "\n")
        except OSError:
            pass
        title, message = error_text(error)
        self.notify(f"{message} (details in {log})", title=f"internal error: {title}", severity="error", timeout=15)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.show_error(event.worker.error)


def run_app(suite_dir: Path | None = None) -> int:
    """Entry point of `aka` with no subcommand (`aka --suite DIR` opens another suite)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    app = AkaApp(suite_dir=suite_dir)
    app.run()
    return int(app.return_code or 0)
