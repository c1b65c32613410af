"""The core imports in a fresh process without the app's packages; the import contracts (pyproject.toml) hold and
break on a violation."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

FORBIDDEN = ("textual", "chromadb", "anthropic", "git", "sentence_transformers", "rich", "ray")
# Every module of the core, the executors and the CLI (whose commands import the rest lazily).
ROOTS = ("aka_tui.bench", "aka_tui.executors", "aka_tui.cli")
EXTRA = ("aka_tui.cli",)


def test_core_imports_only_torch_triton_numpy() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"names = list({EXTRA!r})\n"
        f"for root in {ROOTS!r}:\n"
        "    package = importlib.import_module(root)\n"
        "    names += [m.name for m in pkgutil.walk_packages(package.__path__, root + '.')]\n"
        "for name in names: importlib.import_module(name)\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(len(names), ','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    count, _, bad = out.stdout.strip().partition(" ")
    assert int(count) > 50 and bad == "", f"core pulled in: {bad}"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the aka_tui found at `root`, with the contracts of `root`/pyproject.toml."""
    pytest.importorskip("importlinter", reason="import-linter is a test dependency (requirements-test.txt)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code, "--no-cache"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def test_import_contracts_hold() -> None:
    out = _lint_imports(REPO)
    assert out.returncode == 0 and "broken" in out.stdout and " 0 broken" in out.stdout, out.stdout[-3000:]


def test_import_contracts_break_on_a_core_module_importing_an_app_package(tmp_path: Path) -> None:
    shutil.copytree(REPO / "aka_tui", tmp_path / "aka_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    timing = tmp_path / "aka_tui" / "bench" / "measure" / "timing.py"
    # module-level and lazy (inside a function) imports are both violations
    timing.write_text(timing.read_text() + "\nimport textual\nfrom git import Repo\n\n\ndef _lazy():\n"
                      "    import anthropic\n    import chromadb.config\n    import ray\n")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0 and "The core imports no app, agent or cluster package BROKEN" in out.stdout
    for name in ("textual", "git", "anthropic", "chromadb", "ray"):
        assert f"aka_tui.bench is not allowed to import {name}:" in out.stdout, name
        assert f"aka_tui.bench.measure.timing -> {name}" in out.stdout, name


def test_import_contracts_break_on_the_core_importing_the_agent(tmp_path: Path) -> None:
    shutil.copytree(REPO / "aka_tui", tmp_path / "aka_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    scoring = tmp_path / "aka_tui" / "bench" / "scoring" / "score.py"
    scoring.write_text(scoring.read_text() + "\nfrom aka_tui.agent import loop\n")
    out = _lint_imports(tmp_path)
    assert "The core depends on no other part of aka_tui BROKEN" in out.stdout, out.stdout[-3000:]
    assert "aka_tui.bench.scoring.score -> aka_tui.agent" in out.stdout
