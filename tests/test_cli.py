"""CLI: useful help on every command, one-line errors, the problems listing and a smoke eval."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_tui.environment import environment_snapshot
from tests.conftest import CANDIDATES, DATA, REPO
from tests.prefetch import Prefetch, prefetch, selected

COMMANDS = [[], ["problems"], ["eval"], ["bench"], ["bench", "run"], ["bench", "rescore"], ["bench", "libraries"],
            ["bench", "illusion"], ["roofline"], ["hw"], ["hw", "calibrate"], ["hw", "list"],
            ["kb"], ["kb", "search"], ["kb", "eval"], ["kb", "bench"], ["optimize"]]


def aka(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    # an explicit environment: started on a prefetch thread with env=None, the child would read the process's C
    # environ while pytest sets PYTEST_CURRENT_TEST on the main thread (a freed array: exec failed with EFAULT)
    return subprocess.run([sys.executable, "-m", "aka_tui", *args], cwd=REPO, capture_output=True, text=True,
                          check=check, timeout=600, env=environment_snapshot())


ERRORS = [
    (["eval", "nope.py", "--problem", "rms_norm"], "candidate file nope.py does not exist"),
    (["eval", "eager", "--problem", "no_such_op"], "no problem named 'no_such_op'"),
    (["problems", "--suite", "/nonexistent"], "does not exist"),
    (["eval", "problems", "--problem", "rms_norm"], "candidate file problems is a directory, not a file"),
    (["problems", "--suite", "README.md"], "suite directory README.md is a file, not a directory"),
    (["roofline", "no_such_op"], "no problem named"),
    (["roofline"], "name the problem whose roofline to count"),
    (["hw", "calibrate", "--device", "cpu"], "needs a CUDA GPU"),
    (["eval", "eager", "--problem", "rms_norm", "--device", "tpu"], "unknown device"),
]


def _eval_and_bench_on_the_atrex_fixture(out_dir: Path):  # type: ignore[no-untyped-def]
    evaluated = aka("eval", str(CANDIDATES / "swish_scale_triton.py"), "--problem", "swish_scale", "--suite",
                    str(DATA / "atrex_suite"), "--tier", "full", "--json", str(out_dir / "r.json"), "--cases", "1")
    benched = aka("bench", "--suite", str(DATA / "atrex_suite"), "--baseline", "eager", "--tier", "full",
                  "--out", str(out_dir), "--cases", "1")
    return evaluated, benched, out_dir


WRONG = str(REPO / "problems/rms_norm/solutions/wrong/triton_rms_norm_no_eps.py")


def _fail_then_replay_the_seed():  # type: ignore[no-untyped-def]
    import re

    first = aka("eval", WRONG, "--problem", "rms_norm", "--cases", "1", "--fuzz", "0")
    match = re.search(r"--shape '([^']+)' --replay-seed (\d+)", first.stdout)
    again = None
    if match:
        again = aka("eval", WRONG, "--problem", "rms_norm", "--shape", match[1], "--replay-seed", match[2])
    return first, match, again


def _optimize_then_replay(sessions_dir: Path):  # type: ignore[no-untyped-def]
    # What is asserted is the loop, its output and the recorded session, not the decision on iteration 2: one
    # interleaved re-measurement round keeps that path in the run. The replay is asserted on what it re-issues: it
    # evaluates each recorded kernel once (no baseline, screening or re-measurement).
    out = aka("optimize", "rms_norm", "--iterations", "2", "--no-kb", "--sessions", str(sessions_dir), "--cases", "1",
              "--remeasure-rounds", "1")
    sessions = list(sessions_dir.iterdir())
    replay = None
    if len(sessions) == 1:
        replay = aka("optimize", "rms_norm", "--proposer", "replay", "--from", str(sessions[0]), "--no-kb",
                     "--sessions", str(sessions_dir / "replays"), "--cases", "1",
                     "--no-baseline", "--no-screen", "--remeasure-rounds", "0")
    return out, sessions, replay


def _optimize_without_a_key(sessions_dir: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    return subprocess.run([sys.executable, "-m", "aka_tui", "optimize", "rms_norm", "--proposer", "anthropic",
                           "--no-kb", "--sessions", str(sessions_dir / "k")], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prefetch]:
    """The selected tests' `aka` runs that import torch or evaluate, a few at a time (tests/prefetch.py):
    each is a process the test only waits on. The optimize runs, longest, first."""
    jobs = {
        "test_optimize_runs_the_loop_and_records_a_session": [
            ("optimize", lambda: _optimize_then_replay(tmp_path_factory.mktemp("optimize"))),
            ("optimize without a key", lambda: _optimize_without_a_key(tmp_path_factory.mktemp("no-key")))],
        "test_eval_and_bench_on_the_atrex_fixture": [
            ("atrex", lambda: _eval_and_bench_on_the_atrex_fixture(tmp_path_factory.mktemp("atrex")))],
        "test_a_failure_replays_from_its_seed_with_one_command": [("replay-seed", _fail_then_replay_the_seed)],
        "test_problems_lists_the_suite": [("problems", lambda: aka("problems"))],
        "test_hw_list_has_the_brief_skus": [("hw list", lambda: aka("hw", "list"))],
    }
    wanted = []
    for test, params in selected(request):
        if test == "test_errors_are_one_clear_line":
            args = tuple(params["args"])
            wanted.append((args, lambda args=args: aka(*args)))
        wanted.extend(jobs.get(test, []))
    wanted.sort(key=lambda job: job[0] != "optimize")
    with prefetch(wanted) as ahead:
        yield ahead


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "aka")
def test_help_is_useful(command: list[str]) -> None:
    out = aka(*command, "--help")
    assert out.returncode == 0
    assert "usage: aka" in out.stdout and len(out.stdout.splitlines()) >= 5


@pytest.mark.parametrize("args, fragment", ERRORS)
def test_errors_are_one_clear_line(args: list[str], fragment: str, runs: Prefetch) -> None:
    out = runs.result(tuple(args))
    assert out.returncode == 2
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_problems_lists_the_suite(runs: Prefetch) -> None:
    out = runs.result("problems")
    out.check_returncode()
    assert "rms_norm" in out.stdout and "attention_paged_decode" in out.stdout
    assert "22 problems" in out.stdout or "problems in" in out.stdout


def test_hw_list_has_the_brief_skus(runs: Prefetch) -> None:
    listed = runs.result("hw list")
    listed.check_returncode()
    out = listed.stdout
    for name in ("h200", "h100_sxm", "h20", "a100", "mi300x", "xpu_a_cdna3", "cpu"):
        assert name in out


@pytest.mark.slow
def test_eval_and_bench_on_the_atrex_fixture(runs: Prefetch) -> None:
    out, benched, tmp_path = runs.result("atrex")
    assert out.returncode == 0, out.stderr
    assert "S_op" in out.stdout and "real" in out.stdout
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["provenance"]["schema_version"] == 1 and record["compiled"]
    out = benched
    assert out.returncode == 0, out.stderr
    assert "S_agg" in out.stdout and "fallback" in out.stdout
    report = json.loads((tmp_path / "bench-eager-full.json").read_text())
    assert report["aggregate"]["correct_rate"] == 1.0 and report["aggregate"]["correct_and_real_rate"] == 0.0
    assert (tmp_path / "bench-eager-full.md").read_text().startswith("# baseline:eager")


@pytest.mark.slow
def test_a_failure_replays_from_its_seed_with_one_command(runs: Prefetch) -> None:
    first, match, again = runs.result("replay-seed")
    assert first.returncode == 1
    assert match, first.stdout
    assert f"seed {match[2]}:" in again.stdout and "wrong_output" in again.stdout
    assert again.stdout.count("wrong_output") == 2  # the table row and the failure line: one shape, one case


@pytest.mark.slow
def test_optimize_runs_the_loop_and_records_a_session(runs: Prefetch) -> None:
    out, sessions, replay = runs.result("optimize")
    assert out.returncode == 0, out.stderr
    assert "baseline (eager reference)" in out.stdout and "iter 2:" in out.stdout and "best S_op" in out.stdout
    assert len(sessions) == 1 and (sessions[0] / "iterations" / "0002" / "result.json").is_file()
    assert replay.returncode == 0, replay.stderr
    assert "replay of iteration 1" in replay.stdout and "replay of iteration 2" in replay.stdout
    bad = runs.result("optimize without a key")
    assert bad.returncode == 2 and "no API key" in bad.stderr and "Traceback" not in bad.stderr
