"""Malformed, truncated and gz-truncated traces give one clear error line through the CLI, never a traceback."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from aka_tui.cli import main
from aka_tui.errors import TraceError
from aka_tui.trace.load import read_trace
from tests.trace.kineto import KinetoBuilder


def _valid_trace_bytes() -> bytes:
    b = KinetoBuilder()
    b.annotated_call("aka:rms_norm:s", 0.0, [("void vllm::rms_norm_kernel", 10.0)])
    return json.dumps(b.trace()).encode()


def _cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    raw = _valid_trace_bytes()
    files = {
        "bad_json": (b"{ this is not json", "not valid JSON"),
        "truncated_json": (raw[: len(raw) // 2], "it ends early (truncated?)"),
        "no_trace_events": (b'{"schemaVersion": 1}', "no `traceEvents`"),
        "events_not_list": (b'{"traceEvents": 3}', "must be a list"),
        "truncated_gzip": (gzip.compress(raw)[:-40], "truncated or corrupt gzip"),
        "gzip_of_garbage": (gzip.compress(b"\x00\xff binary"), "neither JSON text nor gzipped JSON"),
        "empty": (b"", "not valid JSON"),
    }
    out = {}
    for name, (content, fragment) in files.items():
        path = tmp_path / f"{name}.json.gz"
        path.write_bytes(content)
        out[name] = (path, fragment)
    out["missing"] = (tmp_path / "nope.json", "does not exist")
    return out


@pytest.mark.parametrize("case", ["bad_json", "truncated_json", "no_trace_events", "events_not_list",
                                  "truncated_gzip", "gzip_of_garbage", "empty", "missing"])
def test_bad_traces_raise_one_clear_trace_error(tmp_path: Path, case: str) -> None:
    path, fragment = _cases(tmp_path)[case]
    with pytest.raises(TraceError, match=re.escape(fragment)):
        read_trace(path)


@pytest.mark.parametrize("case", ["bad_json", "truncated_json", "no_trace_events", "truncated_gzip", "missing"])
def test_cli_prints_one_line_and_returns_2(tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    path, fragment = _cases(tmp_path)[case]
    rc = main(["trace", "import", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2
    assert len(lines) == 1 and lines[0].startswith("trace error: ") and fragment in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_cli_bad_rules_and_bad_weights_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(_valid_trace_bytes())
    rules = tmp_path / "r.json"
    rules.write_text('{"rules": [{"op": "x", "kernel": "(["}]}')
    assert main(["trace", "import", str(trace), "--map", str(rules), "--out", str(tmp_path / "o")]) == 2
    assert main(["trace", "apply", str(rules)]) == 2
    assert main(["trace", "import", str(trace), "--coverage", "1.5", "--out", str(tmp_path / "o")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 3 and all(line.startswith("trace error: ") for line in lines), lines
    assert "bad regular expression" in lines[0] and "not an `aka trace import` weights file" in lines[1]
    assert "--coverage" in lines[2]
    binary_rules = tmp_path / "r.toml"
    binary_rules.write_bytes(b"\xa0\xff not text")
    assert main(["trace", "import", str(trace), "--map", str(binary_rules), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("trace error: cannot read rules file") and "not UTF-8" in err and "\n" not in err, err


def test_cli_import_of_a_good_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(_valid_trace_bytes())
    assert main(["trace", "import", str(trace), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "rms_norm" in out and "time source gpu" in out
    assert (tmp_path / "o" / "trace_weights.json").is_file() and (tmp_path / "o" / "trace_weights.md").is_file()
