"""A reference that writes into its inputs, in a format with no `mutates_inputs` field (the published one):
the evaluator learns from the reference run which inputs it writes, so the reference itself passes, a candidate
must write them likewise, and every other input stays read-only; the agent's transfer may use an in-place
kernel there. A reference that returns None is read through the inputs it writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.problem.lookup import load_problem

PROBLEM = Path(__file__).resolve().parents[1] / "data" / "unseen" / "paged_row_scatter"

_SCATTER = '''import torch
from torch import nn


class Model(nn.Module):
    def forward(self, key, value, key_cache, value_cache, slot_mapping):
        block_size = key_cache.shape[1]
        valid = slot_mapping >= 0
        slots = slot_mapping[valid]
{body}
'''

CANDIDATES = {
    # the caches returned right, but as new tensors: the reference's in-place writes are missing
    "returns_copies": """        key_cache, value_cache = key_cache.clone(), value_cache.clone()
        key_cache[slots // block_size, slots % block_size] = key[valid]
        value_cache[slots // block_size, slots % block_size] = value[valid]
        return key_cache, value_cache""",
    # right writes and outputs, and a scribble on an input the reference only reads
    "writes_a_read_only_input": """        key_cache[slots // block_size, slots % block_size] = key[valid]
        value_cache[slots // block_size, slots % block_size] = value[valid]
        key.zero_()
        return key_cache, value_cache""",
}


def _evaluate(spec: CandidateSpec, problem_dir: Path = PROBLEM) -> CandidateResult:
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)
    return evaluate_candidate(load_problem(problem_dir), spec, options)


def test_the_in_place_reference_passes_as_the_eager_baseline() -> None:
    result = _evaluate(CandidateSpec("eager"))
    assert [s.status for s in result.shapes] == ["passed"], [s.error for s in result.shapes]


@pytest.mark.parametrize("name, message", [
    ("returns_copies", "input `key_cache` does not hold what the reference writes into it"),
    ("writes_a_read_only_input", "input `key` was modified, but the reference treats it as read-only"),
])
def test_a_candidate_writes_what_the_reference_writes_and_nothing_else(name: str, message: str,
                                                                         tmp_path: Path) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(_SCATTER.format(body=CANDIDATES[name]))
    shape = _evaluate(CandidateSpec.file(path)).shapes[0]
    assert shape.status == "wrong_output" and shape.error is not None and message in shape.error.message, shape


def _returning_none(tmp_path: Path) -> Path:
    directory = tmp_path / "paged_row_scatter"
    shutil.copytree(PROBLEM, directory)
    reference = directory / "reference.py"
    reference.write_text(reference.read_text().replace("        return key_cache, value_cache", "        return None"))
    return directory


def test_a_reference_returning_none_is_read_through_the_inputs_it_writes(tmp_path: Path) -> None:
    """Written the way a serving loop's cache write is (no result): the caches it writes are its output, for
    the reference and for every candidate, whatever a candidate returns."""
    directory = _returning_none(tmp_path)
    eager = _evaluate(CandidateSpec("eager"), directory)
    assert [s.status for s in eager.shapes] == ["passed"], [s.error for s in eager.shapes]
    right = tmp_path / "right.py"
    right.write_text(_SCATTER.format(body="""        key_cache[slots // block_size, slots % block_size] = key[valid]
        value_cache[slots // block_size, slots % block_size] = value[valid]"""))
    assert [s.status for s in _evaluate(CandidateSpec.file(right), directory).shapes] == ["passed"]
    swapped = tmp_path / "swapped.py"
    swapped.write_text(_SCATTER.format(body="""        key_cache[slots // block_size, slots % block_size] = value[valid]
        value_cache[slots // block_size, slots % block_size] = key[valid]
        return key_cache, value_cache"""))
    assert [s.status for s in _evaluate(CandidateSpec.file(swapped), directory).shapes] == ["wrong_output"]


def test_a_reference_returning_none_and_writing_nothing_is_one_clear_problem_error(tmp_path: Path) -> None:
    directory = tmp_path / "paged_row_scatter"
    shutil.copytree(PROBLEM, directory)
    reference = directory / "reference.py"
    source = reference.read_text()
    reference.write_text(source[:source.index("        block_size = key_cache.shape[1]")] + "        return None\n")
    shape = _evaluate(CandidateSpec("eager"), directory).shapes[0]
    assert shape.status == "problem_error" and shape.error is not None
    assert "returns None and writes into none of its inputs" in shape.error.message


@pytest.mark.parametrize("returns", ["the caches", "None"])
def test_transfer_finds_an_in_place_kernel_for_an_in_place_reference(returns: str, tmp_path: Path) -> None:
    from aka_tui.agent.probe import make_probes
    from aka_tui.agent.transfer import find_transfers
    from aka_tui.bench.problem.lookup import default_suite_dir
    from aka_tui.knowledge.reference_kernels import reference_kernels
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    problem = load_problem(PROBLEM if returns == "the caches" else _returning_none(tmp_path))
    probes = make_probes(problem, "cpu")
    assert probes[0].written == frozenset({"key_cache", "value_cache"})
    kernels = [k for k in reference_kernels(load_kb(default_kb_dir())) if k.family == "kv_cache"]
    matches = find_transfers(problem, kernels, probes, default_suite_dir())
    assert [m.kernel.family for m in matches] == ["kv_cache"]



def test_inputs_parked_on_the_host_while_the_reference_runs_make_the_same_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs too large for a second device copy wait on the host while the reference runs (`cases._parked`):
    the case is the one built with a device copy, bit for bit: pristine inputs, what the reference wrote where,
    its outputs."""
    from aka_tui.bench.measure import cases
    from aka_tui.bench.problem.inputs import same_bits
    from aka_tui.bench.problem.module_loading import import_file

    problem = load_problem(PROBLEM)
    shape = problem.shapes_for("all")[-1]
    modules = import_file(problem.reference_path, "ref_parked"), import_file(problem.input_path, "inp_parked")

    def build() -> cases.Case:
        seeds = cases.case_seeds(problem, shape, 1)
        return cases.ShapeCases(problem, shape, "cpu", *modules, seeds, True, 1, 2).case(0)

    plain = build()
    hosted: list[bool] = []
    park = cases._parked
    monkeypatch.setattr(cases, "_parked", lambda inputs, device: hosted.append(True) or park(inputs, device))
    monkeypatch.setattr(cases, "PARK_CPU_BYTES", 0)
    parked = build()
    assert hosted and park(parked.inputs, "cpu") is not None
    assert sorted(plain.ref_written) == sorted(parked.ref_written) == ["key_cache", "value_cache"]
    for name, value in plain.inputs.items():
        assert same_bits(value, parked.inputs[name]), name
    for name in plain.ref_written:
        assert same_bits(plain.ref_written[name], parked.ref_written[name]), name
        assert not same_bits(parked.inputs[name], parked.ref_written[name])  # the pristine copy, not the written one
    assert all(same_bits(a, b) for a, b in zip(plain.ref_native, parked.ref_native))
