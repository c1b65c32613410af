"""The offline proposer: instantiates the KB reference kernel and searches its space by bottleneck."""

from __future__ import annotations

import ast

import pytest

from aka_tui.agent.offline import OfflineProposer, tactic_of
from aka_tui.errors import ProposerError
from aka_tui.knowledge.reference_kernels import kernels_for_op, read_tunables
from aka_tui.knowledge.store import default_kb_dir, load_kb

KB = load_kb(default_kb_dir())


def test_tactics_from_names() -> None:
    assert tactic_of("ROWS_PER_PROGRAM") == "work-per-program"
    assert tactic_of("BLOCK_N") == "tile" and tactic_of("num_warps") == "warps"
    assert tactic_of("SPLIT_K") == "split" and tactic_of("ONE_PASS") == "flags"


def test_first_proposal_is_the_reference_kernel_at_its_defaults() -> None:
    proposer = OfflineProposer(kernels_for_op(KB, "rms_norm"), seed=0)
    first = proposer.first()
    ast.parse(first.source)
    assert first.point == proposer.kernel.tunables and first.kernel_id == "rms-norm-reference-kernel"


def test_steps_change_one_tunable_in_priority_order_and_never_repeat() -> None:
    proposer = OfflineProposer(kernels_for_op(KB, "gemm_bf16_linear_epilogue"), seed=3)
    incumbent = dict(proposer.kernel.tunables)
    remembered: list[dict] = []
    for _ in range(12):
        proposal = proposer.propose(incumbent, remembered, "compute-bound", proposer.tactics())
        assert len(proposal.changed) == 1 or proposal.rationale.startswith("neighbourhood exhausted")
        assert proposal.point not in remembered and proposal.point != incumbent
        tunables, _ = read_tunables(proposal.source, proposer.kernel.path)
        assert tunables == proposal.point  # the source really carries the point
        remembered.append(proposal.point)
    first_param = next(iter(OfflineProposer(kernels_for_op(KB, "gemm_bf16_linear_epilogue"), seed=3)
                            .propose(incumbent, [], "compute-bound", ["tile", "stages"]).changed))
    assert tactic_of(first_param) == "tile"


def test_masked_tactics_are_not_changed() -> None:
    """Only the tactics in play change; where the kernel's AUTO switch makes them inert, the switch is turned so
    that they reach the launch (and nothing else changes)."""
    proposer = OfflineProposer(kernels_for_op(KB, "rms_norm"), seed=1)
    for auto in (0, 1):
        incumbent = dict(proposer.kernel.tunables, AUTO=auto)
        for _ in range(5):
            proposal = proposer.propose(incumbent, [], "memory-bound", ["warps"])
            assert "num_warps" in proposal.changed
            assert set(proposal.changed) <= ({"num_warps", "AUTO"} if auto else {"num_warps"}), proposal.changed


def test_no_reference_kernel_is_a_clear_error() -> None:
    with pytest.raises(ProposerError, match="no reference kernel"):
        OfflineProposer([], seed=0)


def test_proposals_evaluate_as_real_kernels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
    from aka_tui.bench.problem.lookup import load_problem
    from tests.conftest import PROBLEMS
    from tests.prefetch import prefetch

    proposer = OfflineProposer(kernels_for_op(KB, "silu_and_mul"), seed=5)
    problem = load_problem(PROBLEMS / "silu_and_mul")
    incumbent = proposer.first()
    step = proposer.propose(incumbent.point, [], "launch-bound", proposer.tactics())
    paths = []
    for index, proposal in enumerate((incumbent, step)):
        paths.append(tmp_path / f"cand{index}.py")
        paths[-1].write_text(proposal.source)
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=1)
    jobs = [(path, lambda path=path: evaluate_candidate(problem, CandidateSpec.file(path), options)) for path in paths]
    with prefetch(jobs) as evaluations:  # side by side (tests/prefetch.py)
        results = [evaluations.result(path) for path in paths]
    for result in results:
        assert all(s.passed for s in result.shapes), [(s.shape_id, s.error) for s in result.shapes]
        assert all(s.audit.real for s in result.shapes if s.audit)


def test_inert_tunables_are_never_proposed_and_equivalent_points_count_once() -> None:
    proposer = OfflineProposer(kernels_for_op(KB, "layer_norm"), seed=5)
    kernel = proposer.kernel
    assert kernel.inert["BLOCK_N"] == {"ONE_PASS": [True]}
    # ONE_PASS on: BLOCK_N and num_stages do nothing; AUTO 0: the explicit rows and warps reach the launch
    incumbent = dict(kernel.tunables, AUTO=0)
    assert kernel.is_inert("BLOCK_N", incumbent) and not kernel.is_inert("BLOCK_N", {**incumbent, "ONE_PASS": False})
    remembered: list[dict] = []
    for _ in range(8):
        proposal = proposer.propose(incumbent, remembered, "memory-bound", ["tile", "stages", "warps", "flags"])
        if proposal.rationale.startswith("neighbourhood exhausted"):
            break
        if "reaches the launch" in proposal.rationale:  # the live neighbours are spent: the switch is turned
            assert proposal.changed.get("ONE_PASS") == (True, False)
            assert not any(kernel.is_inert(p, proposal.point) for p in proposal.changed)
            break
        assert not set(proposal.changed) & {"BLOCK_N", "num_stages"}, proposal.changed
        remembered.append(proposal.point)
    # a remembered point that differs from a candidate only in inert tunables is the same point
    same = {**incumbent, "num_warps": 4, "BLOCK_N": 4096}
    assert kernel.canonical(same) == kernel.canonical({**incumbent, "num_warps": 4})
    step = proposer.propose(incumbent, [same], "memory-bound", ["warps"])
    assert step.point.get("num_warps") != 4
    # with the loop path on, the chunk size matters again and is proposed
    looped = {**incumbent, "ONE_PASS": False}
    changed = {p for _ in range(6) for p in proposer.propose(looped, [], "memory-bound", ["tile"]).changed}
    assert changed == {"BLOCK_N"}


def test_malformed_inert_rules_are_clear_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from aka_tui.errors import KbEntryError
    from aka_tui.knowledge.reference_kernels import read_inert

    space = {"BLOCK_N": [256, 512], "ONE_PASS": [True, False]}
    path = tmp_path / "k.py"
    assert read_inert("X = 1\n", path, space) == {}
    for literal, message in (('{"BLOCK_Q": {"ONE_PASS": [True]}}', "not in SEARCH_SPACE"),
                             ('{"BLOCK_N": {"MODE": [1]}}', "not another tunable"),
                             ('{"BLOCK_N": {"ONE_PASS": [3]}}', "must list values"),
                             ('{"BLOCK_N": {}}', "non-empty dict"),
                             ('[1]', "must be a dict")):
        with pytest.raises(KbEntryError, match=message):
            read_inert(f"INERT = {literal}\n", path, space)
