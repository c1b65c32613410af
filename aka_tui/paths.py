"""Per-user state locations (measured hardware profiles, the knowledge index, configuration)."""

from __future__ import annotations

import os
from pathlib import Path


def aka_home() -> Path:
    """Per-user state directory; AKA_HOME overrides (tests point it at a temporary directory)."""
    return Path(os.environ.get("AKA_HOME") or Path.home() / ".cache" / "aka-tui")
