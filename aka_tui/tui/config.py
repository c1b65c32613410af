"""Settings of the app, persisted as JSON in `$AKA_HOME/config.json`. The API key is never stored here."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from aka_tui.paths import aka_home

PROPOSERS = ("offline", "anthropic", "replay")
KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MODEL = "claude-sonnet-5-5"


@dataclass
class TuiConfig:
    """What a person chooses once and keeps; every field is a plain JSON value."""

    hardware: str = ""
    """Roofline profile name; empty means the detected one (`cpu` without a GPU)."""
    proposer: str = "offline"
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

    def validate(self) -> list[str]:
        """Problems with the values, one line each (empty when valid)."""
        problems = []
        if self.proposer not in PROPOSERS:
            problems.append(f"proposer must be one of {', '.join(PROPOSERS)}")
        if self.iterations < 1:
            problems.append("iterations must be at least 1")
        if not 0.0 <= self.dropout_p < 1.0:
            problems.append("dropout p must be in [0, 1)")
        if self.wall_time_s < 0 or self.max_cost_usd < 0:
            problems.append("budgets cannot be negative")
        if self.tier not in ("", "smoke", "full", "all"):
            problems.append("tier must be smoke, full, all or empty")
        if self.cases < 1:
            problems.append("cases must be at least 1")
        if self.remeasure_rounds < 0:
            problems.append("re-measure rounds cannot be negative")
        return problems


def _same_kind(default: Any, value: Any) -> bool:
    """A settings value of the default's JSON kind (a whole number is a fine float; a bool is not a number)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def _kind(default: Any) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(
        type(default), type(default).__name__)


def config_path() -> Path:
    return aka_home() / "config.json"


def load_config(path: Path | None = None) -> tuple[TuiConfig, str]:
    """(config, warning): an unreadable file gives the defaults and a one-line warning, never an exception."""
    path = path or config_path()
    if not path.is_file():
        return TuiConfig(), ""
    try:
        raw = json.loads(path.read_text())
        known = {f.name: f.type for f in fields(TuiConfig)}
        values = {k: v for k, v in raw.items() if k in known}
        mistyped = [f"{k} must be {_kind(getattr(TuiConfig, k))}" for k, v in values.items()
                    if not _same_kind(getattr(TuiConfig, k), v)]
        if mistyped:
            return TuiConfig(), f"settings file {path}: {'; '.join(mistyped)}; using defaults"
        config = TuiConfig(**values)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError, AttributeError) as exc:
        return TuiConfig(), f"settings file {path} is unreadable ({exc}); using defaults"
    bad = config.validate()
    if bad:
        return TuiConfig(), f"settings file {path}: {'; '.join(bad)}; using defaults"
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
