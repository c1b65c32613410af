"""The Settings screen: hardware profile, proposer, model, API-key status, budgets, dropout; ctrl+s saves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Checkbox, Footer, Header, Input, Label, Select, Static

from aka_tui.tui.config import EDITORS, PROPOSER_NAMES, TuiConfig, api_key_status, config_path, save_config

KEY_TEXT = {
    "present": "[green]present[/green] (ANTHROPIC_API_KEY is set; it is never shown or written)",
    "absent": "[yellow]absent[/yellow]: set ANTHROPIC_API_KEY in the environment to use the anthropic proposer",
    "invalid": "[red]invalid[/red]: ANTHROPIC_API_KEY does not look like an Anthropic key (sk-ant-…)",
}
NUMBER_FIELDS: tuple[tuple[str, str, Literal["integer", "number"]], ...] = (
    ("iterations", "Iteration budget", "integer"), ("wall_time_s", "Wall-time budget, s (0: none)", "number"),
    ("max_cost_usd", "Cost budget, USD (0: none; model proposers)", "number"),
    ("dropout_p", "Optimization dropout p", "number"), ("cases", "Correctness cases per shape", "integer"),
    ("remeasure_rounds", "Re-measure rounds before accepting a win (0: none)", "integer"),
    ("seed", "Seed", "integer"))
TEXT_FIELDS = (("model", "Model id (anthropic proposer)"), ("sessions_dir", "Sessions directory"),
               ("author_name", "Your name (author of your edits)"), ("author_email", "Your e-mail"))


class SettingsScreen(Screen[None]):
    """Edit and persist the app's settings."""

    BINDINGS = [Binding("ctrl+s", "save", "Save", id="settings.save", priority=True)]

    @property
    def _app(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        from aka_tui.bench.roofline.hardware import all_profiles

        c: TuiConfig = self._app.config
        yield Header()
        yield Static(f"Settings are saved to {self._app.config_path or config_path()} (ctrl+s).", classes="status")
        with VerticalScroll(id="settings-form"):
            yield Label("Hardware profile for rooflines and scores")
            profiles = [("detected", "")] + [(f"{p.name} — {p.display_name}", p.name) for p in all_profiles().values()]
            yield Select(profiles, value=c.hardware, allow_blank=False, id="hardware")
            yield Label("Proposer")
            yield Select([(p, p) for p in PROPOSER_NAMES], value=c.proposer, allow_blank=False, id="proposer")
            yield Label("API key")
            yield Static(KEY_TEXT[api_key_status()], id="key-status")
            for name, label in TEXT_FIELDS[:1]:
                yield Label(label)
                yield Input(str(getattr(c, name)), id=name)
            for name, label, kind in NUMBER_FIELDS:
                yield Label(label)
                yield Input(f"{getattr(c, name):g}" if kind == "number" else str(getattr(c, name)), id=name, type=kind)
            yield Label("Shape tier")
            yield Select([("default (smoke on CPU, full on GPU)", ""), ("smoke", "smoke"), ("full", "full"),
                          ("all", "all")], value=c.tier, allow_blank=False, id="tier")
            yield Checkbox("Retrieve knowledge each iteration", c.use_kb, id="use_kb")
            yield Label("Editor for e (external: $VISUAL or $EDITOR, the app suspended while it runs)")
            yield Select([(e, e) for e in EDITORS], value=c.editor, allow_blank=False, id="editor")
            for name, label in TEXT_FIELDS[1:]:
                yield Label(label)
                yield Input(str(getattr(c, name)), id=name)
            yield Static("", id="settings-message")
        yield Footer(compact=True)

    def read_form(self) -> TuiConfig:
        """The config as the form shows it (ValueError names a field that is not a number)."""
        values: dict[str, Any] = {}
        for name in ("hardware", "proposer", "tier", "editor"):
            values[name] = str(self.query_one(f"#{name}", Select).value)
        for name, _label in TEXT_FIELDS:
            values[name] = self.query_one(f"#{name}", Input).value.strip()
        for name, label, kind in NUMBER_FIELDS:
            raw = self.query_one(f"#{name}", Input).value.strip() or "0"
            try:
                values[name] = int(raw) if kind == "integer" else float(raw)
            except ValueError:
                raise ValueError(f"{label}: {raw!r} is not a number") from None
        values["use_kb"] = self.query_one("#use_kb", Checkbox).value
        return replace(self._app.config, **values)

    def action_save(self) -> None:
        message = self.query_one("#settings-message", Static)
        try:
            config = self.read_form()
        except ValueError as exc:
            message.update(f"[red]{exc}[/red]")
            return
        problems = config.validate()
        if problems:
            message.update("[red]" + "; ".join(problems) + "[/red]")
            return
        try:
            path = save_config(config, self._app.config_path)
        except OSError as exc:
            self._app.show_error(f"cannot write the settings: {exc}", "settings")
            return
        hardware_changed = config.hardware != self._app.config.hardware
        self._app.config = config
        message.update(f"[green]saved to {path}[/green]. New sessions use all of them; continuing a session "
                       "applies the budgets, dropout and re-measure rounds, and keeps its proposer, model, "
                       "hardware, tier, cases, seed and knowledge setting (the Session screen says which).")
        self.notify(f"settings saved to {path}")
        if hardware_changed:
            self._app.load_data()
