"""The agent on gated delta rule operators nobody prepared: a recurrent update over packed sequences behind a
serving layer's interface transfers from the recurrent kernel (state in place where the problem mutates it,
a returned pool where it only reads it), and a chunked prefill's state pass transfers from a kernel that has
no suite problem (its own semantics on the interpreter); both candidates are correct and real."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from aka_tui.agent.probe import make_probes
from aka_tui.agent.transfer import find_transfers
from aka_tui.bench.problem.lookup import default_suite_dir, load_problem
from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb

REPO = Path(__file__).resolve().parents[2]
UNSEEN = REPO / "tests" / "data" / "unseen"
KERNELS = reference_kernels(load_kb(default_kb_dir()))


def _transfer(problem):  # type: ignore[no-untyped-def]
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches, f"{problem.name}: no knowledge-base kernel found by its outputs"
    return matches[0]


def test_packed_recurrence_transfers_with_the_state_cache_in_place() -> None:
    match = _transfer(load_problem(UNSEEN / "packed_delta_recurrence"))
    assert match.kernel.entry_id == "linear-attn-gated-delta-decode-reference-kernel"
    mapped = {k: v for k, v in match.arg_map.items() if v[0] == "input"}
    assert mapped == {"q": ["input", "q"], "k": ["input", "k"], "v": ["input", "v"],
                      "state": ["input", "ssm_state"], "state_indices": ["input", "ssm_state_indices"],
                      "A_log": ["input", "A_log"], "a": ["input", "a"], "dt_bias": ["input", "dt_bias"],
                      "b": ["input", "b"], "cu_seqlens": ["input", "cu_seqlens"]}
    assert match.init_map["inplace_final_state"] == ["default"]  # the problem declares ssm_state mutated
    assert match.out_map == [[0]] and match.structure == ("tensor",)


def test_a_read_only_state_cache_takes_the_form_that_returns_a_new_pool(tmp_path: Path) -> None:
    """The same computation where the reference only reads the cache (it updates a copy, and nothing declares
    the cache mutated): a mapping whose kernel writes it in place reproduces the outputs but would fail the
    evaluator's read-only check, so the search goes on to the form that returns a new pool."""
    directory = tmp_path / "packed_delta_recurrence"
    shutil.copytree(UNSEEN / "packed_delta_recurrence", directory)
    reference = directory / "reference.py"
    source = reference.read_text()
    marker = "        heads, dim = v.shape[2], q.shape[3]\n"
    assert marker in source
    reference.write_text(source.replace(marker, "        ssm_state = ssm_state.clone()\n" + marker, 1))
    problem = replace(load_problem(directory), mutates_inputs=())
    match = _transfer(problem)
    assert match.kernel.entry_id == "linear-attn-gated-delta-decode-reference-kernel"
    assert match.init_map["inplace_final_state"] == ["const", False]


def test_chunk_state_pass_transfers_from_a_kernel_without_a_suite_problem() -> None:
    match = _transfer(load_problem(UNSEEN / "chunked_delta_states"))
    assert match.kernel.entry_id == "linear-attn-chunk-delta-state-reference-kernel"
    mapped = {k: v[1] for k, v in match.arg_map.items() if v[0] == "input"}
    assert mapped == {"k": "keys", "w": "w", "u": "u", "g": "g_cumsum", "initial_state": "h0"}
    assert match.init_map["chunk_size"] == ["init", "block"]
    assert match.structure == ("dict", ("entering", "corrected", "last")) and match.out_map == [[0], [1], [2]]


@pytest.mark.parametrize("name, entry", [
    ("packed_delta_recurrence", "linear-attn-gated-delta-decode-reference-kernel"),
    ("chunked_delta_states", "linear-attn-chunk-delta-state-reference-kernel"),
])
def test_optimize_starts_from_a_transferred_kernel_that_is_correct_and_real(tmp_path: Path, name: str,
                                                                             entry: str) -> None:
    run = subprocess.run([sys.executable, "-m", "aka_tui", "optimize", str(UNSEEN / name), "--iterations", "1",
                          "--no-kb", "--no-propose", "--no-baseline", "--cases", "1", "--remeasure-rounds", "0",
                          "--sessions", str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"starting point: transfer from {entry}" in run.stderr
    result = json.loads((next(tmp_path.iterdir()) / "iterations" / "0001" / "result.json").read_text())
    assert result["shapes"] and all(s["status"] == "passed" and s["audit"]["real"] for s in result["shapes"]), \
        result["shapes"]
