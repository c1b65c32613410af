"""Measured wins become proposed experience entries (never from interpreter timings)."""

from __future__ import annotations

import shutil
from pathlib import Path

from aka_tui.agent.experience import propose_experience
from aka_tui.agent.loop import Attempt, LoopConfig, LoopOutcome
from aka_tui.agent.offline import Proposal
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import OpScore
from aka_tui.knowledge.store import load_kb
from tests.conftest import DATA, PROBLEMS


def _attempt(iteration: int, s_op: float, accepted: bool, changed: dict) -> Attempt:
    score = OpScore("rms_norm", 0.015, True, True, True, s_op, s_op, s_op)
    proposal = Proposal("src", "rms-norm-reference-kernel", {"BLOCK_N": 1024}, changed, f"step {iteration}")
    return Attempt(iteration, proposal, score, accepted)


def test_a_measured_win_is_proposed_for_review(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    shutil.copytree(DATA / "kb", kb_dir)
    outcome = LoopOutcome([_attempt(1, 0.40, True, {}), _attempt(2, 0.38, False, {"num_warps": (8, 4)}),
                           _attempt(3, 0.52, True, {"ROWS_PER_PROGRAM": (1, 2)})])
    problem = load_problem(PROBLEMS / "rms_norm")
    path = propose_experience(load_kb(kb_dir), problem, outcome, get_profile("h200"), "S20261129", "full")
    assert path is not None and path.parent.name == "pending"
    entry = load_kb(kb_dir).pending[path.stem]
    assert entry.status == "proposed" and entry.worth.measured and abs(entry.worth.speedup - 1.3) < 1e-9
    assert entry.scope_values("arch") == ("hopper",) and entry.scope_values("ops") == ("rms_norm",)
    assert "ROWS_PER_PROGRAM" in entry.title and "iteration 3" in entry.body


def test_no_entry_from_cpu_timings_or_without_a_gain(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    shutil.copytree(DATA / "kb", kb_dir)
    problem = load_problem(PROBLEMS / "rms_norm")
    win = LoopOutcome([_attempt(1, 0.4, True, {}), _attempt(2, 0.6, True, {"BLOCK_N": (1024, 2048)})])
    assert propose_experience(load_kb(kb_dir), problem, win, get_profile("cpu"), "s", "smoke") is None
    flat = LoopOutcome([_attempt(1, 0.4, True, {}), _attempt(2, 0.41, True, {"BLOCK_N": (1024, 2048)})])
    assert propose_experience(load_kb(kb_dir), problem, flat, get_profile("h200"), "s", "full") is None
    assert LoopConfig().max_tokens is None
