"""A start that is wrong is not proposed again: the offline proposer takes the kernel's ACCURACY_STEPS (settings
that make it more exact), then other points of its space; the steps are read and checked like INERT rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aka_tui.agent.offline import OfflineProposer
from aka_tui.errors import KbEntryError
from aka_tui.knowledge.reference_kernels import kernel_from_source, read_accuracy_steps

REPO = Path(__file__).resolve().parents[2]
UNSEEN = REPO / "tests" / "data" / "unseen"
KERNEL = UNSEEN / "centered_swish_rounding_kernel.py"
SPACE = {"UPCAST": [0, 1], "BLOCK_K": [32, 64, 128], "num_warps": [4, 8]}


def test_steps_are_read_and_checked_against_the_search_space() -> None:
    assert read_accuracy_steps("ACCURACY_STEPS = [{'UPCAST': 1}, {'BLOCK_K': 32}]\n", KERNEL, SPACE) == (
        {"UPCAST": 1}, {"BLOCK_K": 32})
    assert read_accuracy_steps("TUNABLES = {}\n", KERNEL, SPACE) == ()
    for bad in ("ACCURACY_STEPS = {'UPCAST': 1}", "ACCURACY_STEPS = [{}]", "ACCURACY_STEPS = [{'UPCAST': 2}]",
                "ACCURACY_STEPS = [{'TILE': 1}]", "ACCURACY_STEPS = [f(1)]"):
        with pytest.raises(KbEntryError, match="ACCURACY_STEPS"):
            read_accuracy_steps(bad + "\n", KERNEL, SPACE)


def test_recovery_takes_the_steps_then_other_points() -> None:
    kernel = kernel_from_source(KERNEL.read_text(), KERNEL, "rounding", "person")
    proposer = OfflineProposer([kernel], seed=3)
    defaults = dict(kernel.tunables)
    assert proposer.recover([{}]).point == defaults  # what failed was another kernel: its own start first
    step = proposer.recover([defaults], "out: 97% of elements outside atol=1e-05")
    assert step.point == {**defaults, "ROUND_F16": 0} and "accuracy step ROUND_F16 1 → 0" in step.rationale
    assert "97% of elements" in step.rationale
    later = proposer.recover([defaults, step.point])
    assert later.point not in (defaults, step.point) and "random restart" in later.rationale


@pytest.mark.slow
def test_optimize_recovers_from_a_wrong_start(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    run = subprocess.run([sys.executable, "-m", "aka_tui", "optimize", str(UNSEEN / "centered_swish"),
                          "--start", str(KERNEL), "--iterations", "2", "--no-kb", "--no-baseline", "--cases", "1",
                          "--remeasure-rounds", "0", "--sessions", str(sessions)],
                         capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    iterations = next(sessions.iterdir()) / "iterations"
    first = json.loads((iterations / "0001" / "result.json").read_text())
    assert any(s["status"] == "wrong_output" for s in first["shapes"])
    second = json.loads((iterations / "0002" / "result.json").read_text())
    assert all(s["status"] == "passed" for s in second["shapes"]), second["shapes"]
    assert "accuracy step ROUND_F16 1 → 0" in json.loads((iterations / "0002" / "proposal.json").read_text())["rationale"]
    assert "iter 2: S_op" in run.stdout and "ACCEPTED" in run.stdout
    # the rejected start's progress line says why, in one line
    rejected = next(line for line in run.stdout.splitlines() if "iter 1: S_op" in line)
    assert "rejected — " in rejected and "wrong_output" in rejected and len(rejected) < 220, rejected


def test_a_kernel_whose_error_shows_only_on_a_gpu_starts_from_its_steps_in_the_interpreter() -> None:
    """ACCURACY_NEEDS_GPU: the interpreter sums fp8 products exactly, so a CPU session could not see the
    defaults fail; it starts from the steps (and recovers elsewhere, never back to them). A GPU session starts
    from the defaults. The shipped fp8 GEMM declares it."""
    from aka_tui.knowledge.reference_kernels import read_accuracy_needs_gpu

    source = KERNEL.read_text() + "\nACCURACY_NEEDS_GPU = True\n"
    kernel = kernel_from_source(source, KERNEL, "rounding", "person")
    assert kernel.accuracy_needs_gpu and kernel.accuracy_steps
    defaults, stepped = dict(kernel.tunables), {**kernel.tunables, **kernel.accuracy_steps[0]}
    assert OfflineProposer([kernel], seed=3).first().point == defaults
    cpu = OfflineProposer([kernel], seed=3, interpreter=True)
    start = cpu.first()
    assert start.point == stepped and "accuracy steps (ROUND_F16 1 → 0)" in start.rationale
    assert "'ROUND_F16': 0" in start.source
    again = cpu.recover([stepped], "out: 1% of elements outside atol")
    assert again.point not in (stepped,) and "random restart" in again.rationale
    plain = kernel_from_source(KERNEL.read_text(), KERNEL, "rounding", "person")
    assert OfflineProposer([plain], seed=3, interpreter=True).first().point == dict(plain.tunables)
    for bad in ("ACCURACY_NEEDS_GPU = 1", "ACCURACY_NEEDS_GPU = 'yes'"):
        with pytest.raises(KbEntryError, match="ACCURACY_NEEDS_GPU"):
            read_accuracy_needs_gpu(bad + "\n", KERNEL, ({"UPCAST": 1},))
    with pytest.raises(KbEntryError, match="needs ACCURACY_STEPS"):
        read_accuracy_needs_gpu("ACCURACY_NEEDS_GPU = True\n", KERNEL, ())
    from aka_tui.knowledge.reference_kernels import kernels_for_op
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    assert kernels_for_op(load_kb(default_kb_dir()), "gemm_fp8_blockscale")[0].accuracy_needs_gpu


def test_a_one_iteration_budget_starts_from_the_accuracy_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one iteration a wrong start has no second try (the fp8 GEMM's one-iteration H200 sessions ended on
    its failed defaults, 2026-12-06): the offline proposer starts from the declared steps, on any device; with
    more iterations a GPU session starts from the defaults and steps after a failure."""
    from types import SimpleNamespace

    import aka_tui.agent.starting_point as starting_point
    from aka_tui.agent.proposers import ProposerRequest, make_proposer

    kernel = kernel_from_source(KERNEL.read_text(), KERNEL, "rounding", "person")
    defaults, stepped = dict(kernel.tunables), {**kernel.tunables, **kernel.accuracy_steps[0]}
    single = OfflineProposer([kernel], seed=3, single_shot=True).first()
    assert single.point == stepped and "one iteration" in single.rationale
    plain = kernel_from_source(KERNEL.read_text().replace("ACCURACY_STEPS", "_UNUSED_STEPS"), KERNEL, "rounding",
                               "person")
    assert not plain.accuracy_steps
    assert OfflineProposer([plain], seed=3, single_shot=True).first().point == dict(plain.tunables)

    point = SimpleNamespace(kernel=kernel, path="person", detail="person test")
    monkeypatch.setattr(starting_point, "find_starting_point", lambda *args, **kwargs: point)
    problem = SimpleNamespace(name="rounding")
    for iterations, expected in ((1, stepped), (2, defaults), (None, defaults)):
        proposer = make_proposer(ProposerRequest("offline", problem, None, seed=3, device="cuda",
                                                 iterations=iterations))
        assert proposer.first().point == expected, iterations
