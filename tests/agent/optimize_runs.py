"""`aka optimize` run as a person runs it on a problem nobody prepared, and what its first iteration recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNSEEN = REPO / "tests" / "data" / "unseen"


def optimize(problem_dir: Path, sessions: Path, *extra: str) -> subprocess.CompletedProcess:
    """`aka optimize` as a person runs it on a machine without a GPU: TRITON_INTERPRET is not set (the tests'
    own process sets it for in-process kernels; the command must manage without)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-m", "aka_tui", "optimize", str(problem_dir), "--iterations", "1",
                           "--no-kb", "--no-propose", "--no-baseline", "--cases", "1", "--remeasure-rounds", "0",
                           "--sessions", str(sessions), *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=600, env=env)


def recorded(sessions: Path) -> tuple[dict, dict]:
    session = next(sessions.iterdir())
    proposal = json.loads((session / "iterations" / "0001" / "proposal.json").read_text())
    result = json.loads((session / "iterations" / "0001" / "result.json").read_text())
    return proposal, result


def started_correct_and_real(problem_dir: Path, sessions: Path, printed: str, path: str, *extra: str) -> dict:
    """`aka optimize` (with `extra` arguments) on `problem_dir` printed `printed`, recorded `path` as the start,
    and the start is correct and real on every shape; its result."""
    run = optimize(problem_dir, sessions, *extra)
    assert run.returncode == 0, run.stderr[-2000:]
    assert printed in run.stderr
    proposal, result = recorded(sessions)
    assert proposal["path"] == path
    assert correct_and_real(result), result["shapes"]
    return result


def correct_and_real(result: dict) -> bool:
    timed = [s for s in result["shapes"] if not s["shape_id"].startswith("fuzz.")]
    return bool(timed) and all(s["status"] == "passed" for s in result["shapes"]) and \
        all(s["audit"]["real"] for s in timed)


def seeded_on_the_cpu(problem_name: str) -> str:
    """The compiler seed of the made-up problem `problem_name`, built and checked in this process on its smallest
    probe (the CPU interpreter): the reason it records; the test fails when no seed is built."""
    from aka_tui.agent.probe import make_probes
    from aka_tui.agent.seed_source import build_seed
    from aka_tui.bench.problem.lookup import load_problem

    problem = load_problem(UNSEEN / problem_name)
    seeded = build_seed(problem, make_probes(problem, "cpu")[:1], None, "cpu")
    assert seeded.source is not None, seeded.reason
    return seeded.reason
