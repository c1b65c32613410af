"""The core imports in a fresh process without textual, chromadb, anthropic, git or sentence-transformers."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

FORBIDDEN = ("textual", "chromadb", "anthropic", "git", "sentence_transformers", "rich", "ray")
# Every module of the core, the executors and the CLI's parser (whose commands import the rest lazily).
ROOTS = ("aka_tui.bench", "aka_tui.executors")
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


def test_layering_bench_imports_nothing_of_ours_but_errors_and_paths() -> None:
    import re

    allowed = ("aka_tui.bench", "aka_tui.errors", "aka_tui.paths", "aka_tui.safe_ast", "aka_tui.secrets",
               "aka_tui import __version__")
    for path in sorted((REPO / "aka_tui" / "bench").rglob("*.py")):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*(?:from|import)\s+(aka_tui[\w.]*)", line)
            if match:
                assert match.group(1).startswith(allowed), f"{path.name}: {line.strip()}"


def test_knowledge_imports_no_agent_tui_or_record() -> None:
    import re

    for path in sorted((REPO / "aka_tui" / "knowledge").rglob("*.py")):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*(?:from|import)\s+(aka_tui\.\w+)", line)
            if match:
                allowed = ("aka_tui.knowledge", "aka_tui.errors", "aka_tui.paths", "aka_tui.safe_ast",
                           "aka_tui.secrets")
                assert match.group(1) in allowed, f"{path.name}: {line}"


def test_record_imports_only_itself_errors_and_paths() -> None:
    import re

    for path in sorted((REPO / "aka_tui" / "record").rglob("*.py")):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*(?:from|import)\s+(aka_tui\.\w+)", line)
            if match:
                assert match.group(1) in ("aka_tui.record", "aka_tui.errors", "aka_tui.paths", "aka_tui.secrets"), \
                    f"{path.name}: {line}"
