"""Integer outputs where the reference's own answer is a tie-break: a candidate that breaks exact ties the other
way passes (the reference gives that row under rounding-level noise on its inputs); one that mixes the tied
answers (the same index twice), or swaps indices whose scores differ, is wrong (`problem/unsettled.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.measure.samples import failing_calls
from aka_tui.bench.problem import unsettled
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.tolerance import Tolerance, compare_outputs

PROBLEM = Path(__file__).resolve().parents[1] / "data" / "unseen" / "tied_score_ranking"

_CANDIDATE = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, logits):
        scores = torch.softmax(logits.float(), dim=-1)
{body}
'''

BODIES = {
    "ties_broken_the_other_way": """        weights, ids = torch.topk(scores, self.k, dim=-1)
        ids = ids.to(torch.int32)
        tied = weights[:, 0] == weights[:, 1]
        ids[tied, :2] = ids[tied][:, [1, 0]]
        return weights, ids""",
    "the_same_index_twice": """        weights, ids = torch.topk(scores, self.k, dim=-1)
        ids = ids.to(torch.int32)
        tied = weights[:, 0] == weights[:, 1]
        ids[tied, 1] = ids[tied, 0]
        return weights, ids""",
    "two_slots_swapped": """        weights, ids = torch.topk(scores, self.k, dim=-1)
        ids = ids.to(torch.int32)
        ids[:, [2, 3]] = ids[:, [3, 2]]
        return weights, ids""",
}


def _evaluate(name: str, tmp_path: Path) -> CandidateResult:
    path = tmp_path / f"{name}.py"
    path.write_text(_CANDIDATE.format(body=BODIES[name]))
    options = EvalOptions(device="cpu", tier="all", cases=2, cpu_reps=2, input_sets=2, fuzz=0)
    return evaluate_candidate(load_problem(PROBLEM), CandidateSpec.file(path), options)


def test_a_candidate_that_breaks_exact_ties_the_other_way_passes(tmp_path: Path) -> None:
    result = _evaluate("ties_broken_the_other_way", tmp_path)
    assert [s.status for s in result.shapes] == ["passed", "passed"], [s.error for s in result.shapes]
    assert all(s.verification.get("integer_tie_breaks") for s in result.shapes)  # recorded in the report


@pytest.mark.parametrize("name, message", [
    ("the_same_index_twice", "row(s) that no run of the reference gives"),
    ("two_slots_swapped", "integer elements differ"),
])
def test_mixed_or_swapped_indices_stay_wrong(name: str, message: str, tmp_path: Path) -> None:
    result = _evaluate(name, tmp_path)
    assert all(s.status == "wrong_output" for s in result.shapes), [s.error for s in result.shapes]
    assert any(s.error is not None and message in s.error.message for s in result.shapes), \
        [s.error for s in result.shapes]


def test_noise_leaves_integers_and_integer_valued_floats_as_they_are() -> None:
    inputs = {"x": torch.randn(64, dtype=torch.float64), "mask": torch.tensor([0.0, 1.0, 2.0]),
              "ids": torch.arange(5), "half": torch.randn(8).to(torch.bfloat16)}
    noisy = unsettled.perturbed(inputs, seed=3)
    assert torch.equal(noisy["mask"], inputs["mask"]) and torch.equal(noisy["ids"], inputs["ids"])
    assert noisy["ids"] is not inputs["ids"]  # a copy: a reference that writes its inputs cannot reach the case's
    change = (noisy["x"] / inputs["x"] - 1).abs()
    assert 0 < float(change.max()) <= unsettled.RELATIVE_NOISE
    assert torch.equal(noisy["half"], inputs["half"])  # below bfloat16's precision: rounded away


def test_without_answers_or_past_the_cap_integers_are_exact() -> None:
    reference = torch.tensor([[0, 1], [2, 3], [4, 5], [6, 7]], dtype=torch.int32)
    swapped = torch.tensor([[1, 0], [2, 3], [4, 5], [6, 7]], dtype=torch.int32)
    answers = torch.stack([reference.reshape(-1), swapped.reshape(-1)])
    tol = lambda dtype: Tolerance(0.0, 0.0)  # noqa: E731
    assert compare_outputs(swapped, reference, reference, tol, 0.0, lambda name: answers).ok
    assert "exact match required" in compare_outputs(swapped, reference, reference, tol, 0.0).reason
    everything_off = torch.tensor([[1, 0], [3, 2], [5, 4], [6, 7]], dtype=torch.int32)  # 6 of 8: past MAX_FRACTION
    verdict = compare_outputs(everything_off, reference, reference, tol, 0.0, lambda name: answers)
    assert not verdict.ok and "exact match required" in verdict.reason


def test_sampled_checks_accept_an_element_a_noisy_run_gave() -> None:
    expected = [torch.tensor([5, 6, 7])]
    calls = [[torch.tensor([5, 7, 7])], [torch.tensor([5, 6, 9])]]
    answers = torch.tensor([[5, 6, 7], [5, 7, 6]])
    tol = lambda dtype: Tolerance(0.0, 0.0)  # noqa: E731
    assert [i for i, _ in failing_calls(calls, expected, tol, 0.0)] == [0, 1]
    assert [i for i, _ in failing_calls(calls, expected, tol, 0.0, answers_for=lambda j: answers)] == [1]


def _top2(logits: torch.Tensor) -> torch.Tensor:
    return torch.topk(torch.softmax(logits, dim=-1), 2, dim=-1).indices.to(torch.int32)


def test_enough_runs_to_give_every_tied_row_its_other_order() -> None:
    """400 of 3200 rows with their two best scores tied exactly (float64: the noise always breaks the tie, each
    way at odds 1/2): a candidate breaking every tie the other way passes with the default number of runs; eight
    runs (the earlier default) leave some rows ungiven at these seeds."""
    logits = torch.randn(3200, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    logits[::8, :2] = 10.0  # above every other score
    expected = _top2(logits)
    other_way = expected.clone()
    other_way[::8] = expected[::8, [1, 0]]
    run = lambda inputs: _top2(inputs["logits"])  # noqa: E731
    for seed in (1, 2, 3):
        answers = unsettled.alternatives(run, {"logits": logits}, seed)["out"]
        assert answers.shape[0] == unsettled.DRAWS
        assert unsettled.integer_mismatch("ids", other_way, expected, lambda name: answers) is None
        few = unsettled.alternatives(run, {"logits": logits}, seed, draws=8)["out"]
        assert "no run of the reference gives" in (unsettled.integer_mismatch("ids", other_way, expected,
                                                                              lambda name: few) or "")


def test_one_run_when_no_input_takes_noise_and_fewer_past_the_byte_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def run(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        calls.append(1)
        return torch.argsort(inputs["keys"]).to(torch.int32)

    answers = unsettled.alternatives(run, {"keys": torch.tensor([3.0, 1.0, 2.0]), "n": torch.arange(3)}, seed=5)
    assert len(calls) == 1 and answers["out"].shape == (1, 3)
    answers = unsettled.alternatives(run, {"keys": torch.tensor([3.5, 1.0, 2.0])}, seed=5)
    assert len(calls) == 1 + unsettled.DRAWS and answers["out"].shape == (unsettled.DRAWS, 3)
    monkeypatch.setattr(unsettled, "ANSWER_BYTES", 2 * 3 * 4)  # two runs of three int32 indices
    assert unsettled.alternatives(run, {"keys": torch.tensor([3.5, 1.0, 2.0])}, seed=5)["out"].shape == (2, 3)
