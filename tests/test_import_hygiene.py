"""The core imports in a fresh process without textual, chromadb, anthropic, git or sentence-transformers."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

FORBIDDEN = ("textual", "chromadb", "anthropic", "git", "sentence_transformers", "rich")
CORE_MODULES = (
    "aka_tui.bench.problem", "aka_tui.bench.evaluate", "aka_tui.bench.suite_run", "aka_tui.bench.report",
    "aka_tui.bench.score", "aka_tui.bench.roofline_refresh", "aka_tui.bench.worker", "aka_tui.bench.hardware",
    "aka_tui.bench.check_problem", "aka_tui.bench.library_compare", "aka_tui.cli",
)


def test_core_imports_only_torch_triton_numpy() -> None:
    code = (
        "import sys\n"
        f"for m in {CORE_MODULES!r}: __import__(m)\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core pulled in: {out.stdout.strip()}"


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
