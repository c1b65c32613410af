"""One error hierarchy: every error a person can cause carries a title and a one-line message."""

from __future__ import annotations

import sys
from typing import Callable


class AkaError(Exception):
    """An error the CLI/TUI shows as `title: message` without a traceback."""

    title = "aka error"

    def __init__(self, message: str, title: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if title is not None:
            self.title = title

    def __str__(self) -> str:
        return self.message


class ProblemFormatError(AkaError):
    """A problem directory (native or Atrex-Bench) is malformed."""

    title = "bad problem directory"


class ProblemNotFound(ProblemFormatError):
    """No problem directory of that name or at that path."""

    title = "unknown problem"


class CandidateCompileError(AkaError):
    """A candidate file cannot be loaded (syntax error, import error, no Model)."""

    title = "candidate does not compile"


class HardwareProfileError(AkaError):
    """A hardware profile is unknown or malformed."""

    title = "hardware profile error"


class EvaluationError(AkaError):
    """The evaluator itself cannot proceed (bad options, missing device)."""

    title = "evaluation error"


class KbEntryError(AkaError):
    """A knowledge-base entry is malformed."""

    title = "bad knowledge-base entry"


class ProposerError(AkaError):
    """A proposer (model API, offline search, replay) failed."""

    title = "proposer error"


class TraceError(AkaError):
    """A profiler trace, a kernel-mapping rules file or a trace-weights file is unreadable or malformed."""

    title = "trace error"


def run_main(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """Run a module's `main(argv)` as `python -m` does: an AkaError is its one line on stderr, exit status 2."""
    try:
        return main(argv)
    except AkaError as exc:
        print(f"{exc.title}: {exc.message}", file=sys.stderr)
        return 2
