"""The sweep reads its sandboxed child's events file as it would read anything the candidate could replace."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aka_tui.tuning.isolation import _Events


def test_events_are_read_in_complete_lines_and_garbage_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events-0.jsonl"
    events = _Events(path)
    assert events.read() == []  # not written yet
    path.write_bytes(b'{"event": "a"}\nnot json\n[1, 2]\n{"event": "b", "n": ')
    assert events.read() == [{"event": "a"}]
    with path.open("ab") as handle:
        handle.write(b'3}\n')
    assert events.read() == [{"event": "b", "n": 3}]


def test_a_link_out_of_the_work_dir_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({"secret": "id_ed25519"}) + "\n")
    path = tmp_path / "work" / "events-0.jsonl"
    path.parent.mkdir()
    path.symlink_to(outside)
    assert _Events(path).read() == []


def test_a_fifo_in_its_place_does_not_block(tmp_path: Path) -> None:
    path = tmp_path / "events-0.jsonl"
    os.mkfifo(path)
    assert _Events(path).read() == []
