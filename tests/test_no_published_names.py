"""The product is general: no code, knowledge-base entry or problem of ours names an operator of the published
benchmark data, except the names our own suite also uses. The names are read from the data directory at test
time, so this test knows none of them either."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

SUBSET = REPO.parent / "shared" / "atrex-bench-subset"
SCANNED = ("aka_tui", "kb", "problems", "tests", "scripts")
SUFFIXES = {".py", ".md", ".json", ".yaml", ".toml", ".sh", ".txt"}


@pytest.mark.skipif(not SUBSET.is_dir(), reason=f"the published subset is not at {SUBSET}")
def test_no_source_names_a_published_operator() -> None:
    ours = {p.name for p in (REPO / "problems").iterdir() if p.is_dir()}
    published = sorted(p.name for p in SUBSET.iterdir() if p.is_dir() and p.name not in ours)
    assert published, "expected published operator directories beside our own"
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, published)) + r")\b")
    hits = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                found = pattern.search(line)
                if found:
                    hits.append(f"{path.relative_to(REPO)}:{number}: {found.group(0)}")
    assert not hits, "published operator names in our sources:\n" + "\n".join(hits[:20])
