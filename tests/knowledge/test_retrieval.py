"""The Chroma index (real MiniLM embeddings, offline) and layered, scoped retrieval."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aka_tui.knowledge.evaluation import leak_check, top_k
from aka_tui.knowledge.index import KbIndex
from aka_tui.knowledge.retrieval import KbQuery, render_context, retrieve
from aka_tui.knowledge.store import load_kb
from tests.conftest import DATA


@pytest.fixture()
def kb_dir(tmp_path: Path) -> Path:
    target = tmp_path / "kb"
    shutil.copytree(DATA / "kb", target)
    return target


@pytest.fixture()
def index(kb_dir: Path, tmp_path: Path) -> KbIndex:
    idx = KbIndex(kb_dir, index_dir=tmp_path / "index")
    report = idx.sync(load_kb(kb_dir))
    assert report.added == len(load_kb(kb_dir).entries) and report.unchanged == 0
    return idx


def test_incremental_sync_by_content_hash(kb_dir: Path, index: KbIndex, tmp_path: Path) -> None:
    kb = load_kb(kb_dir)
    assert index.sync(kb).unchanged == len(kb.entries)
    path = kb_dir / "dsl" / "triton-mask-tails.md"
    path.write_text(path.read_text().replace("never pad", "do not pad"))
    (kb_dir / "family" / "gemm" / "gemm-group-m-swizzle.md").unlink()
    report = KbIndex(kb_dir, index_dir=tmp_path / "index").sync(load_kb(kb_dir))  # reopened from disk
    assert (report.added, report.updated, report.removed) == (0, 1, 1)


def test_corrupt_index_is_rebuilt_with_a_message(kb_dir: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    KbIndex(kb_dir, index_dir=index_dir).sync(load_kb(kb_dir))
    for path in index_dir.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage" * 64)
    messages: list[str] = []
    rebuilt = KbIndex(kb_dir, index_dir=index_dir, on_message=messages.append)
    report = rebuilt.sync(load_kb(kb_dir))
    assert report.rebuilt and report.added == len(load_kb(kb_dir).entries)
    assert messages and "rebuilding" in messages[0]


def test_layered_assembly_with_exact_hardware_lookup(kb_dir: Path, index: KbIndex) -> None:
    query = KbQuery("rms_norm is far below copy bandwidth", hardware="h200", vendor="nvidia", arch="hopper",
                    family="norm", op="rms_norm")
    result = retrieve(load_kb(kb_dir), index, query)
    layers = [r.entry.layer for r in result.entries]
    assert layers == sorted(layers, key=["hardware", "architecture", "dsl", "family", "experience"].index)
    assert result.entries[0].entry.id == "hw-h200" and result.entries[0].how == "exact"
    ids = result.ids
    assert "hw-a100" not in ids and "ampere-cp-async" not in ids and "cdna3-wavefront" not in ids
    assert "gemm-group-m-swizzle" not in ids  # another family
    assert "norm-one-pass" in ids
    assert "silu-streaming-95pct" not in ids  # experience scoped to activation
    text = render_context(result)
    assert "## hardware" in text and "measured 1.4x" in text


def test_semantic_ranking_and_worth_boost(kb_dir: Path, index: KbIndex) -> None:
    kb = load_kb(kb_dir)
    query = KbQuery("tokens with a small hidden size: many tiny rows", family="norm", op="rms_norm",
                    layers=("family",))
    assert top_k(kb, index, query, 1) == ["norm-rows-per-program"]
    amd = KbQuery("how wide is a wavefront on MI300X", vendor="amd", arch="cdna3", layers=("architecture",))
    assert top_k(kb, index, amd, 1) == ["cdna3-wavefront"]


def test_budget_limits_the_context(kb_dir: Path, index: KbIndex) -> None:
    query = KbQuery("anything about kernels", hardware="h200", vendor="nvidia", arch="hopper", family="norm",
                    budget_chars=250)
    result = retrieve(load_kb(kb_dir), index, query)
    assert result.used_chars <= 250 and result.over_budget


def test_no_scoped_entry_leaks(kb_dir: Path, index: KbIndex) -> None:
    report = leak_check(load_kb(kb_dir), index)
    assert report.queries >= 8 and report.leaks == []
