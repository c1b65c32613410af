"""Keep secrets off disk: everything the recorder writes passes through `scrub` (aka_tui/secrets.py)."""

from __future__ import annotations

from aka_tui.secrets import REDACTED, SECRET_ENV_VARS, contains_secret, scrub

__all__ = ["REDACTED", "SECRET_ENV_VARS", "contains_secret", "scrub"]
