"""Finding problems: one directory, a suite of them, and the one lookup from a name or a folder to a Problem."""

from __future__ import annotations

from pathlib import Path

from aka_tui.bench.problem.model import Problem, Suite
from aka_tui.errors import ProblemFormatError
from aka_tui.paths import checkout_dir


def load_problem(directory: str | Path) -> Problem:
    """Load one problem directory in either format; raises ProblemFormatError naming file and problem."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProblemFormatError(f"{directory}: not a directory")
    if (directory / "problem.json").exists():
        from aka_tui.bench.problem.native import load_native

        return load_native(directory)
    if (directory / "metadata.json").exists():
        from aka_tui.bench.problem.atrex import load_atrex

        return load_atrex(directory)
    raise ProblemFormatError(
        f"{directory.name}: neither problem.json (native) nor metadata.json (Atrex-Bench) found in {directory}")


def is_problem_dir(directory: Path) -> bool:
    """A directory that holds a problem in either format (or at least a reference)."""
    return directory.is_dir() and any((directory / n).exists() for n in ("problem.json", "metadata.json", "reference.py"))


def load_suite(directory: str | Path) -> Suite:
    """Load every problem directory under `directory`; malformed ones are collected, not fatal."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProblemFormatError(f"suite directory {directory} does not exist")
    problems: dict[str, Problem] = {}
    errors: dict[str, ProblemFormatError] = {}
    for child in sorted(directory.iterdir()):
        if not is_problem_dir(child):
            continue
        try:
            problem = load_problem(child)
            problems[problem.name] = problem
        except ProblemFormatError as exc:
            errors[child.name] = exc
    if not problems and not errors:
        raise ProblemFormatError(f"no problem directories found in {directory}")
    return Suite(directory, problems, errors)


def default_suite_dir() -> Path:
    """The shipped suite: `problems/` beside the package (a source checkout)."""
    return checkout_dir() / "problems"
