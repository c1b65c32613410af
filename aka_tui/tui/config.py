"""Settings of the app, persisted as JSON in `$AKA_HOME/config.json`. The API key is never stored here."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from aka_tui.agent.proposers import DEFAULT_MODEL, DEFAULT_PROPOSER, PROPOSER_NAMES
from aka_tui.paths import aka_home

EDITORS = ("external", "builtin")
KEY_ENV = "ANTHROPIC_API_KEY"


@dataclass
class TuiConfig:
    """What a person chooses once and keeps; every field is a plain JSON value."""

    hardware: str = ""
    """Roofline profile name; empty means the detected one (`cpu` without a GPU)."""
    proposer: str = DEFAULT_PROPOSER
    """offline (no key), anthropic (needs ANTHROPIC_API_KEY) or replay (re-issues a recorded session)."""
    model: str = DEFAULT_MODEL
    """Model id for the anthropic proposer."""
    iterations: int = 4
    """Iteration budget of a session."""
    wall_time_s: float = 0.0
    """Wall-time budget in seconds (0: none)."""
    max_cost_usd: float = 0.0
    """Cost budget for model proposers in USD (0: none)."""
    dropout_p: float = 0.5
    """Optimization dropout probability."""
    remeasure_rounds: int = 3
    """Interleaved re-measurement rounds before a win is accepted (0: accept on one evaluation)."""
    tier: str = ""
    """Shape tier: smoke, full, or empty for the default (smoke on the CPU, full on a GPU)."""
    cases: int = 1
    """Seeded correctness cases per shape in a live session."""
    seed: int = 0
    use_kb: bool = True
    """Retrieve knowledge for each iteration (loads the embedding model on the first session)."""
    sessions_dir: str = "sessions"
    """Where new session repositories go (relative to the working directory)."""
    author_name: str = "kernel engineer"
    """Author of the commits made by your edits."""
    author_email: str = "engineer@aka-tui.invalid"
    editor: str = "external"
    """How `e` edits a kernel or entry: external ($VISUAL or $EDITOR, the app suspended while it runs; the
    in-app editor when neither is set) or builtin (always the in-app editor)."""

    def field_problems(self) -> dict[str, str]:
        """What is wrong with each field that has a bad value (empty when valid)."""
        problems = {}
        if self.proposer not in PROPOSER_NAMES:
            problems["proposer"] = f"proposer must be one of {', '.join(PROPOSER_NAMES)}"
        if self.iterations < 1:
            problems["iterations"] = "iterations must be at least 1"
        if not 0.0 <= self.dropout_p < 1.0:
            problems["dropout_p"] = "dropout p must be in [0, 1)"
        if self.wall_time_s < 0:
            problems["wall_time_s"] = "the wall-time budget cannot be negative"
        if self.max_cost_usd < 0:
            problems["max_cost_usd"] = "the cost budget cannot be negative"
        if self.tier not in ("", "smoke", "full", "all"):
            problems["tier"] = "tier must be smoke, full, all or empty"
        if self.cases < 1:
            problems["cases"] = "cases must be at least 1"
        if self.remeasure_rounds < 0:
            problems["remeasure_rounds"] = "re-measure rounds cannot be negative"
        if self.editor not in EDITORS:
            problems["editor"] = f"editor must be one of {', '.join(EDITORS)}"
        return problems

    def validate(self) -> list[str]:
        """Problems with the values, one line each (empty when valid)."""
        return list(self.field_problems().values())


_FIELD_NAMES = tuple(f.name for f in fields(TuiConfig))


def config_path() -> Path:
    return aka_home() / "config.json"


def _typed(name: str, value: Any, default: Any) -> Any:
    """`value` as the type of the field's default; ValueError names the field when it cannot be."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(value, str):
        return value
    raise ValueError(f"{name} = {json.dumps(value)} is not a {type(default).__name__}")


def load_config(path: Path | None = None) -> tuple[TuiConfig, str]:
    """(config, warning): a field with a bad value gets its default, and the warning says which, in one line;
    an unreadable file gives all the defaults. Never an exception."""
    path = path or config_path()
    if not path.is_file():
        return TuiConfig(), ""
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return TuiConfig(), f"settings file {path} is unreadable ({exc}); using the defaults"
    if not isinstance(raw, dict):
        return TuiConfig(), f"settings file {path} is not a JSON object; using the defaults"
    defaults = TuiConfig()
    values: dict[str, Any] = {}
    problems: list[str] = [f"unknown setting {key!r} ignored" for key in raw if key not in _FIELD_NAMES]
    for name in _FIELD_NAMES:
        if name in raw:
            try:
                values[name] = _typed(name, raw[name], getattr(defaults, name))
            except ValueError as exc:
                problems.append(str(exc))
    config = TuiConfig(**values)
    for name, message in config.field_problems().items():  # a valid type with a bad value: its default
        problems.append(message)
        setattr(config, name, getattr(defaults, name))
    if problems:
        return config, f"settings file {path}: {'; '.join(problems)} (defaults used for those)"
    return config, ""


def save_config(config: TuiConfig, path: Path | None = None) -> Path:
    """Write the settings (never a key: the dataclass has no field for one)."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = asdict(config)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def api_key_status(environ: dict[str, str] | None = None) -> str:
    """present / absent / invalid (by format; a key the API rejected shows up as a session error)."""
    key = (environ if environ is not None else os.environ).get(KEY_ENV, "")
    if not key:
        return "absent"
    if not key.startswith("sk-ant-") or len(key) < 20 or any(c.isspace() for c in key):
        return "invalid"
    return "present"
