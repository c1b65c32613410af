"""CLI: useful help on every command, one-line errors, the problems listing and a smoke eval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CANDIDATES, DATA, REPO

COMMANDS = [[], ["problems"], ["eval"], ["bench"], ["roofline"], ["hw"], ["hw", "calibrate"], ["hw", "list"],
            ["kb"], ["kb", "search"], ["kb", "eval"], ["kb", "bench"], ["optimize"]]


def aka(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aka_tui", *args], cwd=REPO, capture_output=True, text=True,
                          check=check, timeout=600)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "aka")
def test_help_is_useful(command: list[str]) -> None:
    out = aka(*command, "--help")
    assert out.returncode == 0
    assert "usage: aka" in out.stdout and len(out.stdout.splitlines()) >= 5


@pytest.mark.parametrize("args, fragment", [
    (["eval", "nope.py", "--problem", "rms_norm"], "candidate file nope.py does not exist"),
    (["eval", "eager", "--problem", "no_such_op"], "no problem named 'no_such_op'"),
    (["problems", "--suite", "/nonexistent"], "does not exist"),
    (["roofline", "no_such_op"], "no problem named"),
    (["hw", "calibrate", "--device", "cpu"], "needs a CUDA GPU"),
    (["eval", "eager", "--problem", "rms_norm", "--device", "tpu"], "unknown device"),
])
def test_errors_are_one_clear_line(args: list[str], fragment: str) -> None:
    out = aka(*args)
    assert out.returncode == 2
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_problems_lists_the_suite() -> None:
    out = aka("problems", check=True)
    assert "rms_norm" in out.stdout and "attention_paged_decode" in out.stdout
    assert "22 problems" in out.stdout or "problems in" in out.stdout


def test_hw_list_has_the_brief_skus() -> None:
    out = aka("hw", "list", check=True).stdout
    for name in ("h200", "h100_sxm", "h20", "a100", "mi300x", "xpu_a_cdna3", "cpu"):
        assert name in out


def test_eval_and_bench_on_the_atrex_fixture(tmp_path: Path) -> None:
    out = aka("eval", str(CANDIDATES / "swish_scale_triton.py"), "--problem", "swish_scale", "--suite",
              str(DATA / "atrex_suite"), "--tier", "full", "--json", str(tmp_path / "r.json"), "--cases", "1")
    assert out.returncode == 0, out.stderr
    assert "S_op" in out.stdout and "real" in out.stdout
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["provenance"]["schema_version"] == 1 and record["compiled"]
    out = aka("bench", "--suite", str(DATA / "atrex_suite"), "--baseline", "eager", "--tier", "full",
              "--out", str(tmp_path), "--cases", "1")
    assert out.returncode == 0, out.stderr
    assert "S_agg" in out.stdout and "fallback" in out.stdout
    report = json.loads((tmp_path / "bench-eager-full.json").read_text())
    assert report["aggregate"]["correct_rate"] == 1.0 and report["aggregate"]["correct_and_real_rate"] == 0.0
    assert (tmp_path / "bench-eager-full.md").read_text().startswith("# baseline:eager")


def test_a_failure_replays_from_its_seed_with_one_command() -> None:
    import re

    wrong = str(REPO / "problems/rms_norm/solutions/wrong/triton_rms_norm_no_eps.py")
    first = aka("eval", wrong, "--problem", "rms_norm", "--cases", "1", "--fuzz", "0")
    assert first.returncode == 1
    match = re.search(r"--shape '([^']+)' --replay-seed (\d+)", first.stdout)
    assert match, first.stdout
    again = aka("eval", wrong, "--problem", "rms_norm", "--shape", match[1], "--replay-seed", match[2])
    assert f"seed {match[2]}:" in again.stdout and "wrong_output" in again.stdout
    assert again.stdout.count("wrong_output") == 2  # the table row and the failure line: one shape, one case


def test_optimize_runs_the_loop_and_records_a_session(tmp_path: Path) -> None:
    out = aka("optimize", "rms_norm", "--iterations", "2", "--no-kb", "--sessions", str(tmp_path), "--cases", "1")
    assert out.returncode == 0, out.stderr
    assert "baseline (eager reference)" in out.stdout and "iter 2:" in out.stdout and "best S_op" in out.stdout
    sessions = list(tmp_path.iterdir())
    assert len(sessions) == 1 and (sessions[0] / "iterations" / "0002" / "result.json").is_file()
    replay = aka("optimize", "rms_norm", "--proposer", "replay", "--from", str(sessions[0]), "--no-kb",
                 "--sessions", str(tmp_path / "replays"), "--cases", "1")
    assert replay.returncode == 0, replay.stderr
    assert "replay of iteration 1" in replay.stdout and "replay of iteration 2" in replay.stdout
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    bad = subprocess.run([sys.executable, "-m", "aka_tui", "optimize", "rms_norm", "--proposer", "anthropic",
                          "--no-kb", "--sessions", str(tmp_path / "k")], cwd=REPO, capture_output=True, text=True,
                         env=env, timeout=300)
    assert bad.returncode == 2 and "no API key" in bad.stderr and "Traceback" not in bad.stderr
