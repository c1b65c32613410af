"""Where things are: the package and the checkout around it (shipped suite, KB, examples), and per-user state
(measured hardware profiles, the knowledge index, configuration)."""

from __future__ import annotations

import os
from pathlib import Path


def package_dir() -> Path:
    """The aka_tui package this process runs."""
    return Path(__file__).resolve().parent


def checkout_dir() -> Path:
    """The directory around the package: a source checkout holds problems/, kb/ and sessions/examples/ there."""
    return package_dir().parent


def aka_home() -> Path:
    """Per-user state directory; AKA_HOME overrides (tests point it at a temporary directory)."""
    return Path(os.environ.get("AKA_HOME") or Path.home() / ".cache" / "aka-tui")
