"""`aka trace` help is useful, and the trace package imports with only torch + numpy + the standard library."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aka_tui.cli import main
from tests.conftest import REPO

MODULES = ("aka_tui.trace.commands", "aka_tui.trace.load", "aka_tui.trace.rules", "aka_tui.trace.link",
           "aka_tui.trace.weights", "aka_tui.trace.apply", "aka_tui.trace.record")
FORBIDDEN = ("yaml", "textual", "chromadb", "anthropic", "git", "sentence_transformers", "rich", "triton")


@pytest.mark.parametrize("command", [["trace"], ["trace", "record"], ["trace", "import"], ["trace", "apply"]])
def test_help_is_useful(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "usage: aka trace" in out and len(out.splitlines()) >= 5


def test_trace_package_needs_only_torch_numpy_stdlib() -> None:
    code = (
        "import sys\n"
        f"for m in {MODULES!r}: __import__(m)\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"aka_tui.trace pulled in: {out.stdout.strip()}"


def test_trace_imports_only_itself_bench_errors_and_version() -> None:
    import re

    allowed = ("aka_tui.trace", "aka_tui.bench", "aka_tui.errors", "aka_tui import __version__")
    for path in sorted((REPO / "aka_tui" / "trace").rglob("*.py")):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*(?:from|import)\s+(aka_tui[\w.]*(?: import __version__)?)", line)
            if match:
                assert match.group(1).startswith(allowed), f"{path.name}: {line.strip()}"
