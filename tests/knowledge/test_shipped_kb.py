"""The shipped knowledge base: valid, covering every layer and family, no scope leaks, recall@3 ≥ 0.9."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.roofline.hardware import datasheet_profiles
from aka_tui.knowledge.entry import LAYERS
from aka_tui.knowledge.evaluation import evaluate_retrieval, leak_check
from aka_tui.knowledge.index import KbIndex
from aka_tui.knowledge.retrieval import hardware_entry_id
from aka_tui.knowledge.store import default_kb_dir, load_kb
from tests.conftest import PROBLEMS

KB = load_kb(default_kb_dir())


def test_every_entry_is_valid_and_there_are_enough() -> None:
    assert not KB.errors, [str(e) for e in KB.errors]
    assert len(KB.entries) >= 80
    assert {e.layer for e in KB.entries.values()} == set(LAYERS)


def test_the_readme_counts_the_entries_there_are() -> None:
    readme = (default_kb_dir().parent / "README.md").read_text()
    assert f"**the knowledge base**: {len(KB.entries)} entries under `kb/`" in readme


def test_a_hardware_entry_for_every_profile_and_family_entries_for_every_family() -> None:
    for name in datasheet_profiles():
        assert hardware_entry_id(name) in KB.entries, f"no hardware entry for profile {name}"
    families = {p.family for p in load_suite(PROBLEMS).problems.values()}
    for family in families:
        entries = [e for e in KB.entries.values() if e.layer == "family" and family in e.scope_values("family")]
        assert len(entries) >= 3, f"family {family} has {len(entries)} entries"


def test_scoped_ops_name_real_problems() -> None:
    problems = set(load_suite(PROBLEMS).problems)
    for entry in KB.entries.values():
        unknown = set(entry.scope_values("ops")) - problems
        assert not unknown, f"{entry.id} scopes unknown ops {unknown}"


@pytest.fixture
def shipped_index(shipped_kb_index: KbIndex) -> KbIndex:
    assert shipped_kb_index.kb_root == KB.root
    return shipped_kb_index


@pytest.mark.slow
def test_no_scoped_entry_leaks_into_another_scope(shipped_index: KbIndex) -> None:
    report = leak_check(KB, shipped_index)
    assert report.queries >= 100 and report.leaks == []


def test_retrieval_recall_at_3(shipped_index: KbIndex) -> None:
    queries = json.loads((Path(KB.root) / "retrieval-eval.json").read_text())
    assert len(queries) >= 25
    report = evaluate_retrieval(KB, shipped_index, queries, k=3)
    assert report.recall >= 0.9, "\n".join(report.lines)
