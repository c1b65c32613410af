"""`aka sessions`, `aka export`, `aka replay [--rerun]` on the shipped examples, offline, on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_tui.cli import main

SMOKE = ["--device", "cpu", "--tier", "smoke", "--cases", "1", "--fuzz", "0"]


def test_sessions_lists_the_shipped_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "--sessions", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for column in ("id", "problem", "proposer", "hardware", "iters", "best S_op", "accepted tag", "started"):
        assert column in out.splitlines()[0]
    assert "rms_norm-example" in out and "rms_norm-best" in out and "silu_and_mul-example" in out
    assert main(["sessions", "--sessions", str(tmp_path), "--problem", "rms_norm"]) == 0
    out = capsys.readouterr().out
    assert "rms_norm-example" in out and "silu_and_mul-example" not in out


def test_replay_prints_each_step_as_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "rms_norm-example"]) == 0
    out = capsys.readouterr().out
    assert "iter 1  aka agent  ACCEPTED" in out and "iter 3  aka agent  rejected" in out
    assert "tag rms_norm-best" in out and "rationale: memory-bound bottleneck" in out
    assert "masked tactics tile, warps" in out and "masked iterations [1]" in out and "screened out: no" in out
    assert "finished: iteration budget spent" in out


def test_exported_kernel_evaluates_correct_and_real(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "exported" / "rms_norm.py"
    assert main(["export", "rms_norm-example", "--out", str(out_file)]) == 0
    text = out_file.read_text()
    header = text.splitlines()[:5]
    assert all(line.startswith("# ") for line in header)
    assert "session rms_norm-example, iteration 2" in text and "tag rms_norm-best" in text
    assert "S_op 0.0006" in text and "hardware profile cpu" in text and "class Model" in text
    capsys.readouterr()
    assert main(["eval", str(out_file), "--problem", "rms_norm", *SMOKE]) == 0
    assert "correct=True real=True" in capsys.readouterr().out


@pytest.mark.slow
def test_replay_rerun_shows_recorded_and_now(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "silu_and_mul-example", "--rerun", *SMOKE]) == 0
    out = capsys.readouterr().out
    table = out[out.index("iter  recorded verdict"):].splitlines()[2:]
    assert [row.split()[0] for row in table] == ["1", "2", "3"]
    assert all(row.count("correct, real") == 2 for row in table)  # recorded and now


def test_session_command_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "session.json").write_text("[1, 2")
    (tmp_path / "empty").mkdir()
    for argv, message in [(["export", "nope"], "no session 'nope'"), (["replay", "empty"], "not a session"),
                          (["replay", "broken"], "unreadable"),
                          (["export", "rms_norm-example", "--iteration", "9"], "no recorded iteration 9")]:
        assert main([*argv, "--sessions", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
