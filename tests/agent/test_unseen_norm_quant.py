"""A normalisation with a quantised output, unseen: the knowledge base's RMSNorm + fp8 kernel (which no suite
problem defines) is found by its outputs, run on Triton's interpreter with the examples its Model declares,
and the transferred candidate is correct and real on an fp8 format Triton cannot emit on NVIDIA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aka_tui.agent.probe import make_probes
from aka_tui.agent.transfer import find_transfers, kb_semantics
from aka_tui.bench.problem.lookup import default_suite_dir, load_problem
from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "tests" / "data" / "unseen" / "skip_norm_fp8_codes"
ENTRY = "rms-norm-quant-fp8-reference-kernel"
KERNELS = reference_kernels(load_kb(default_kb_dir()))


def test_a_kernel_without_a_suite_problem_is_its_own_semantics_on_the_interpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from triton.runtime.interpreter import InterpretedFunction

    kernel = next(k for k in KERNELS if k.entry_id == ENTRY)
    assert kernel.ops == ()  # no suite problem: its own Model defines what it computes
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # as in a session on a GPU
    semantics = kb_semantics(kernel, default_suite_dir())
    assert semantics is not None and "TRITON_INTERPRET" not in os.environ
    module = sys.modules[semantics.model_class.__module__]
    assert isinstance(module._rms_norm_quant_fp8_kernel, InterpretedFunction)  # runs on CPU probe tensors
    examples = {p.name: p.example for p in semantics.forward_params}
    assert examples["x"].shape == (4, 256) and examples["x"].dtype == torch.bfloat16
    assert examples["weight"].ndim == 1 and examples["scale"].dtype == torch.float32
    assert {p.name: p.example for p in semantics.init_params} == {"eps": 1e-6, "out_dtype": "float8_e4m3fn"}


def test_norm_quant_transfers_behind_another_interface() -> None:
    problem = load_problem(PROBLEM)
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == ENTRY
    match = matches[0]
    assert match.arg_map == {"x": ["input", "hidden"], "weight": ["input", "gamma"], "residual": ["input", "skip"],
                             "scale": ["default"]}  # no scale given: the per-row dynamic scale
    assert match.init_map == {"eps": ["init", "variance_epsilon"], "out_dtype": ["const", "float8_e4m3fnuz"]}
    assert match.out_map == [[0], [1], [2]] and match.structure == ("dict", ("codes", "row_scale", "stream"))


def test_it_transfers_in_a_process_whose_triton_compiles() -> None:
    """As in a session on a GPU: TRITON_INTERPRET unset when Triton is imported, so Triton's library functions
    (`tl.sum`) are compiled ones, which the interpreted kernel calls all the same; and `triton.language` is as it
    was afterwards (interpreter patches left behind broke every kernel the process compiled later)."""
    script = ("import sys; from pathlib import Path; import triton.language as tl; "
              "from aka_tui.agent.probe import make_probes; from aka_tui.agent.transfer import find_transfers; "
              "from aka_tui.bench.problem.lookup import default_suite_dir, load_problem; "
              "from aka_tui.knowledge.reference_kernels import reference_kernels; "
              "from aka_tui.knowledge.store import default_kb_dir, load_kb; "
              "assert type(tl.sum).__name__ == 'JITFunction'; "
              "mods = (tl, tl.core, tl.math, tl.standard, tl.core.tensor); "
              "state = lambda: [dict(vars(m)) for m in mods]; before = state(); "
              "p = load_problem(Path(sys.argv[1])); "
              "m = find_transfers(p, reference_kernels(load_kb(default_kb_dir())), make_probes(p, 'cpu'), "
              "default_suite_dir()); after = state(); "
              "assert all(a[n] is v for a, b in zip(after, before) for n, v in b.items()), 'triton.language patched'; "
              "print(m[0].kernel.entry_id if m else 'none')")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", script, str(PROBLEM)], capture_output=True, text=True, cwd=REPO,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == ENTRY


def test_kernels_with_suite_semantics_are_tried_before_those_on_the_interpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aka_tui.agent import transfer

    tried: list[str] = []
    monkeypatch.setattr(transfer, "kb_semantics", lambda kernel, suite_dir: tried.append(kernel.entry_id))
    problem = load_problem(REPO / "tests" / "data" / "unseen" / "scaled_hidden_norm")  # family "other"
    assert find_transfers(problem, KERNELS, [], default_suite_dir()) == []
    with_suite_problem = [k.entry_id for k in KERNELS if k.ops]
    assert len(tried) == len(KERNELS) and set(tried[:len(with_suite_problem)]) == set(with_suite_problem)
    assert tried.index(ENTRY) >= len(with_suite_problem)


@pytest.mark.slow
def test_optimize_starts_from_the_transferred_kernel_and_it_is_correct_and_real(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    run = subprocess.run([sys.executable, "-m", "aka_tui", "optimize", str(PROBLEM), "--iterations", "1", "--no-kb",
                          "--no-propose", "--no-baseline", "--cases", "1", "--remeasure-rounds", "0",
                          "--sessions", str(sessions)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"starting point: transfer from {ENTRY}" in run.stderr
    result = json.loads((next(sessions.iterdir()) / "iterations" / "0001" / "result.json").read_text())
    timed = [s for s in result["shapes"] if not s["shape_id"].startswith("fuzz.")]
    assert timed and all(s["status"] == "passed" for s in result["shapes"]), result["shapes"]
    assert all(s["audit"]["real"] for s in timed)


def test_declared_examples_leave_out_what_is_malformed() -> None:
    from aka_tui.agent.own_semantics import declared_examples

    class Declares:
        EXAMPLE_CALL = {"init": {"eps": 1e-5}, "forward": {"x": ["float16", [2, 8]], "n": 3, "bad": ["nodtype", [2]],
                                                          "neg": ["float32", [-1]], "odd": [1, 2], "w": "float32"}}

    init, forward = declared_examples(Declares)
    assert init == {"eps": 1e-5} and set(forward) == {"x", "n", "w"}
    assert forward["x"].shape == (2, 8) and forward["x"].dtype == torch.float16 and forward["n"] == 3
    assert declared_examples(object) == ({}, {})
