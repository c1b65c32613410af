"""How the app words an error: a title and one line, with the CLI's hints turned into the app's."""

from __future__ import annotations

from aka_tui.errors import AkaError

# The CLI names its flags in hints; in the app the same choice is made in Settings.
APP_WORDING = (("--proposer offline", "the offline proposer (Settings, F6)"),
               ("--force continues anyway", "continue anyway when asked"))


def app_wording(message: str) -> str:
    """A message with the CLI's flag hints replaced by where the app offers the same choice."""
    for cli, app in APP_WORDING:
        message = message.replace(cli, app)
    return message


def error_text(error: BaseException) -> tuple[str, str]:
    """(title, one-line message) for any error: AkaError keeps its own title, others name their type."""
    if isinstance(error, AkaError):
        return error.title, app_wording(error.message)
    text = str(error).strip()
    return type(error).__name__, text.splitlines()[0][:300] if text else "(no message)"
