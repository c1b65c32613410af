"""A reference's unsorted top-k is compared in the sorted order (`settled_order.py`): the scan that finds one, the
settled Model, and the evaluator holding a candidate to that order."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.settled_order import as_written, import_reference, may_leave_topk_unsorted
from tests.agent.optimize_runs import UNSEEN


@pytest.mark.parametrize("call", [
    "x.topk(4, sorted=False)", "torch.topk(x, 4, -1, True, False)", "x.topk(4, -1, True, self.flag)",
    "torch.topk(x, 4, sorted=flag)", "x.topk(4, **options)", "topk(x, 4, -1, True, False)", "x.topk(*args)",
])
def test_a_top_k_that_may_be_unsorted_is_found(call: str) -> None:
    assert may_leave_topk_unsorted(f"def f(x):\n    return {call}\n")


@pytest.mark.parametrize("call", [
    "x.topk(4)", "torch.topk(x, 4, sorted=True)", "torch.topk(x, 4, -1, True)", "x.topk(4, -1, True, True)",
    "x.sort(descending=False)", "x.kthvalue(2)",
])
def test_a_sorted_top_k_leaves_the_reference_as_written(call: str) -> None:
    assert not may_leave_topk_unsorted(f"def f(x):\n    return {call}\n")


_UNSORTED = '''import torch


class Model(torch.nn.Module):
    """Picks the largest entries, in no promised order."""

    def __init__(self, k: int = 5):
        super().__init__()
        self.k = k
        self.register_buffer("shift", torch.zeros(1))

    def forward(self, scores, bias=None):
        values, ids = torch.topk(scores + self.shift, self.k, -1, True, False)
        return values * 2, ids
'''


def test_the_settled_model_returns_the_sorted_order_with_the_reference_s_signature(tmp_path: Path) -> None:
    path = tmp_path / "reference.py"
    path.write_text(_UNSORTED)
    module = import_reference(path, "settled_test")
    scores = torch.randn(6, 64)
    values, ids = module.Model(k=7)(scores=scores)
    want = torch.topk(scores, 7, dim=-1)
    assert torch.equal(ids, want.indices) and torch.equal(values, want.values * 2)
    written = as_written(module.Model)
    assert written is not module.Model and issubclass(module.Model, written)
    assert not torch.equal(written(k=7)(scores)[1], want.indices)  # the CPU's unsorted order, as written
    assert list(inspect.signature(module.Model.forward).parameters) == ["self", "scores", "bias"]
    assert list(module.Model(k=3).state_dict()) == ["shift"] and module.Model.__name__ == "Model"
    assert as_written(written) is written


def test_the_evaluator_holds_a_candidate_to_the_sorted_order(tmp_path: Path) -> None:
    """Grouped routing whose top-k calls are unsorted (published format): its experts largest first pass, the
    same ids and weights in the order of the experts' indices fail, and the eager reference (settled as the cases
    are) passes."""
    problem = load_problem(UNSEEN / "grouped_biased_routing")
    reference = (UNSEEN / "grouped_biased_routing" / "reference.py").read_text()
    largest_first = tmp_path / "largest_first.py"
    largest_first.write_text(reference.replace("self.top_k, dim=-1, sorted=False)", "self.top_k, dim=-1)"))
    by_index = tmp_path / "by_index.py"
    by_index.write_text(reference.replace(
        "        return weights, ids.to(torch.int32)",
        "        ids, order = ids.sort(dim=-1)\n        return weights.gather(1, order), ids.to(torch.int32)"))
    assert largest_first.read_text() != reference and by_index.read_text() != reference
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0,
                          limits=WorkerLimits(startup_s=120, per_shape_s=120))
    verdicts = {name: [s.status for s in evaluate_candidate(problem, spec, options).shapes] for name, spec in (
        ("largest first", CandidateSpec.file(largest_first)), ("by index", CandidateSpec.file(by_index)),
        ("eager", CandidateSpec("eager")))}
    assert verdicts == {"largest first": ["passed"], "by index": ["wrong_output"], "eager": ["passed"]}, verdicts
