"""Finding problems: one directory, a suite of them, and the one lookup from a name or a folder to a Problem."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aka_tui.bench.problem.model import Problem, Suite
from aka_tui.errors import ProblemFormatError, ProblemNotFound
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
        what = "is a file, not a directory" if directory.exists() else "does not exist"
        raise ProblemFormatError(f"suite directory {directory} {what}")
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


def find_problem(name_or_dir: str | Path, suite_dir: str | Path | None = None,
                 recorded: Sequence[str | Path | None] = ()) -> Problem:
    """The one lookup from what a person (or a recorded session) names to a Problem: each directory in `recorded`
    that holds a problem (e.g. the directory a session was recorded with), then `name_or_dir` when it is a problem
    directory, then the problem of that name in the suite (default: the shipped one)."""
    for directory in (*recorded, name_or_dir):
        if directory and is_problem_dir(Path(directory)):
            return load_problem(directory)
    suite = Path(suite_dir) if suite_dir else default_suite_dir()
    name = str(name_or_dir)
    if name and (suite / name).is_dir():
        return load_problem(suite / name)
    raise ProblemNotFound(f"no problem named {name!r} in {suite} (see `aka problems`)")
