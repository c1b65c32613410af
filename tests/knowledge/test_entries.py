"""Entry format, validation with file and field, the store and curation of proposed entries."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from aka_tui.errors import KbEntryError
from aka_tui.knowledge.entry import parse_entry, render_entry
from aka_tui.knowledge.store import accept_pending, load_kb, reject_pending, remove_entry, write_entry
from tests.conftest import DATA

FIXTURE = DATA / "kb"


@pytest.fixture()
def kb_dir(tmp_path: Path) -> Path:
    target = tmp_path / "kb"
    shutil.copytree(FIXTURE, target)
    return target


def test_fixture_loads_every_layer() -> None:
    kb = load_kb(FIXTURE)
    assert not kb.errors
    assert {e.layer for e in kb.entries.values()} == {"hardware", "architecture", "dsl", "family", "experience"}
    entry = kb.get("norm-rows-per-program")
    assert entry.worth.measured and entry.worth.speedup == 1.4
    assert entry.scope_values("family") == ("norm",) and entry.scope_values("arch") == ()


def test_render_round_trips() -> None:
    for entry in load_kb(FIXTURE).entries.values():
        again = parse_entry(entry.path, text=render_entry(entry))
        assert replace(again, path=entry.path) == entry


@pytest.mark.parametrize("mutation, field", [
    (lambda t: t.replace('layer = "dsl"', 'layer = "dls"'), "layer"),
    (lambda t: t.replace('kind = "technique"', 'kind = "trick"'), "kind"),
    (lambda t: t.replace('id = "triton-mask-tails"', 'id = "Triton Mask"'), "id"),
    (lambda t: t.replace('id = "triton-mask-tails"', 'id = "other-name"'), "id"),
    (lambda t: t.replace('signals = ["correctness"]', 'signals = ["fast"]'), "signals"),
    (lambda t: t.replace('title = ', 'titel = '), "title"),
    (lambda t: t.replace("[scope]", "[scope]\nsku = []"), "scope"),
    (lambda t: t.replace('source = "documented"', 'source = "measured"'), "worth.measured_on"),
    (lambda t: t.replace('speedup = 0', 'speedup = "fast"'), "worth.speedup"),
    (lambda t: t.replace("+++\n", "", 1), "front matter"),
    (lambda t: t.replace('dsl = ["triton"]', 'dsl = "triton"'), "scope.dsl"),
    (lambda t: t.split("+++")[0] + "+++" + t.split("+++")[1] + "+++\n", "body"),
])
def test_malformed_entries_name_file_and_field(kb_dir: Path, mutation, field: str) -> None:  # type: ignore[no-untyped-def]
    path = kb_dir / "dsl" / "triton-mask-tails.md"
    path.write_text(mutation(path.read_text()))
    kb = load_kb(kb_dir)
    assert len(kb.errors) == 1
    message = str(kb.errors[0])
    assert str(path) in message and f": {field}:" in message, message
    assert len(kb.entries) == len(load_kb(FIXTURE).entries) - 1  # the rest still loads


def test_duplicate_ids_and_wrong_folder(kb_dir: Path) -> None:
    shutil.copy(kb_dir / "dsl" / "triton-mask-tails.md", kb_dir / "architecture" / "triton-mask-tails.md")
    errors = [str(e) for e in load_kb(kb_dir).errors]
    assert any("layer" in e and "architecture/" in e for e in errors) or any("already used" in e for e in errors)


def test_reference_kernel_entry_needs_its_file(kb_dir: Path) -> None:
    path = kb_dir / "family" / "norm" / "norm-one-pass.md"
    path.write_text(path.read_text().replace('kind = "technique"', 'kind = "reference-kernel"\nkernel = "missing.py"'))
    assert any(": kernel:" in str(e) for e in load_kb(kb_dir).errors)


def test_add_propose_accept_reject_and_remove(kb_dir: Path) -> None:
    kb = load_kb(kb_dir)
    base = kb.get("triton-fp32-accumulate")
    proposed = replace(base, id="exp-new-win", layer="experience", title="A measured win", status="proposed")
    path = write_entry(kb, proposed, pending=True)
    assert path.parent.name == "pending" and "exp-new-win" in load_kb(kb_dir).pending
    with pytest.raises(KbEntryError, match="already exists"):
        write_entry(kb, proposed, pending=True)
    accepted = accept_pending(load_kb(kb_dir), "exp-new-win")
    assert accepted == kb_dir / "experience" / "exp-new-win.md"
    assert load_kb(kb_dir).get("exp-new-win").status == "accepted"
    other = replace(base, id="exp-bad-idea", layer="experience", title="Not a win")
    write_entry(load_kb(kb_dir), other, pending=True)
    rejected = reject_pending(load_kb(kb_dir), "exp-bad-idea")
    assert rejected.is_file() and "exp-bad-idea" not in load_kb(kb_dir).pending  # kept, not listed
    remove_entry(load_kb(kb_dir), "exp-new-win")
    with pytest.raises(KbEntryError, match="no knowledge-base entry"):
        load_kb(kb_dir).get("exp-new-win")
