"""The evaluation worker loads torch's compiler (dynamo, 1.5-2 s of every worker's start) only when the
candidate needs it: a plain kernel's whole evaluation runs without it, poisoning and the aten audit included.
The red-team corpus covers the other side: a candidate that loads it anyway is re-run with it loaded up front
(`honest/rms_norm_loads_compiler_midway.py`), and tampering after loading it is still found
(`candidates/compiler_loaded_then_patched_clock.py`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROBLEMS

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = """
import json, sys
from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, build_job
from aka_tui.bench.evaluator.worker import run
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile

problem = load_problem(sys.argv[1])
options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)
shape_ids = [s.shape_id for s in problem.shapes_for("smoke")][:1]
job = build_job(problem, CandidateSpec.file(sys.argv[2]), options, "cpu", get_profile("cpu"), shape_ids, [])
events = []
code = run(job.to_json(), events.append)
print(json.dumps({"code": code, "events": [e["event"] for e in events],
                  "statuses": [e["result"]["status"] for e in events if e["event"] == "shape_result"],
                  "real": [e["result"]["audit"]["real"] for e in events if e["event"] == "shape_result"],
                  "loaded": sorted(m for m in ("torch._dynamo", "torch._inductor.config") if m in sys.modules)}))
"""


def _run_worker(candidate: Path, problem: Path = PROBLEMS / "rms_norm") -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(problem), str(candidate)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_plain_kernel_is_evaluated_without_loading_the_compiler() -> None:
    report = _run_worker(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py")
    assert report["code"] == 0 and report["statuses"] == ["passed"] and report["real"] == [True], report
    assert report["loaded"] == [], report


def test_a_roofline_counted_in_the_worker_loads_no_compiler(tmp_path: Path) -> None:
    """A problem without counted rooflines (a new directory): the worker counts the reference's FLOPs under a
    dispatch mode, which must not load dynamo (that would stop the worker for a re-run with it up front)."""
    problem = tmp_path / "rms_norm"
    shutil.copytree(PROBLEMS / "rms_norm", problem, ignore=shutil.ignore_patterns("roofline.json", "solutions"))
    report = _run_worker(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py", problem)
    assert report["code"] == 0 and report["statuses"] == ["passed"] and report["real"] == [True], report
    assert report["loaded"] == [], report


def test_a_candidate_naming_the_compiler_gets_it_before_the_snapshot(tmp_path: Path) -> None:
    """Named in the source: loaded up front, so the worker needs no re-run."""
    source = (PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py").read_text()
    candidate = tmp_path / "rms_norm_named.py"
    candidate.write_text("import torch._dynamo  # noqa: F401\n" + source)
    report = _run_worker(candidate)
    assert report["code"] == 0 and report["statuses"] == ["passed"], report
    assert "torch._dynamo" in report["loaded"]


def test_a_candidate_loading_the_compiler_unnamed_asks_for_a_rerun(tmp_path: Path) -> None:
    """Loaded by a side effect the source does not name: the worker stops before reporting the candidate
    compiled, with the status that makes the parent re-run it with the compiler loaded up front."""
    from aka_tui.bench.evaluator.worker_entry import EXIT_PRELOAD

    source = (PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py").read_text()
    candidate = tmp_path / "rms_norm_side_effect.py"
    candidate.write_text(source + "\n\n_keep_out_of_graphs = torch.compiler.disable(lambda t: t)\n")
    report = _run_worker(candidate)
    assert report["code"] == EXIT_PRELOAD and "compiled" not in report["events"], report


def test_who_gets_the_compiler_up_front(tmp_path: Path) -> None:
    """On a GPU the profiled calls load it for every hardened file candidate, so it is loaded before the
    snapshot there (a re-run per evaluation otherwise); on the CPU only for sources naming it or a compile
    baseline; never for the eager baseline or a naive (unhardened) check, whose integrity is not checked."""
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, build_job
    from aka_tui.bench.evaluator.worker import dynamo_up_front
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.roofline.hardware import get_profile

    problem = load_problem(PROBLEMS / "rms_norm")
    plain = PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py"
    named = tmp_path / "named.py"
    named.write_text("from torch._inductor.runtime import triton_helpers  # noqa: F401\n" + plain.read_text())

    def up_front(spec: CandidateSpec, device: str, hardening: bool = True) -> bool:
        options = EvalOptions(device=device, tier="smoke", hardening=hardening)
        return dynamo_up_front(build_job(problem, spec, options, device, get_profile("cpu"), ["x"], []))

    mentioned = tmp_path / "mentioned.py"  # comments and strings that name it load nothing
    mentioned.write_text('"""Faster than torch.compile; no torch._dynamo here."""\n# torch._inductor wrote 2 kernels\n'
                         + plain.read_text() + '\nNOTE = f"see torch.compile {1}"\n')
    assert not up_front(CandidateSpec.file(plain), "cpu")
    assert not up_front(CandidateSpec.file(mentioned), "cpu")
    assert up_front(CandidateSpec.file(named), "cpu")
    assert up_front(CandidateSpec.file(plain), "cuda")
    assert not up_front(CandidateSpec.file(plain), "cuda", hardening=False)
    assert up_front(CandidateSpec("compile"), "cpu") and not up_front(CandidateSpec("eager"), "cuda")


@pytest.mark.parametrize("source, named", [
    ("import torch._dynamo", True), ("compiled = torch . compile(f)", True), ("torch.export.export(m, ())", True),
    ("from torch._inductor.runtime import triton_helpers", True), ("x = 1  # torch.compile", False),
    ('"""torch._dynamo"""', False), ("s = 'torch.compile'", False), ('"""torch.compile', True)])
def test_the_compiler_is_named_by_code_not_by_comments_or_strings(source: str, named: bool) -> None:
    """An unparsable source is read whole (the hint errs towards loading it up front)."""
    from aka_tui.bench.evaluator.worker import names_compiler

    assert names_compiler(source) is named


def test_a_second_request_for_the_rerun_ends_the_evaluation() -> None:
    """A worker that exits with the re-run status after the re-run was granted is the candidate using the
    evaluator's own status: its shape and every shape left are crashed at once, no worker started per shape."""
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
    from aka_tui.bench.evaluator.isolation import WorkerLimits
    from aka_tui.bench.problem.lookup import load_problem

    problem = load_problem(PROBLEMS / "rms_norm")
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1,
                          limits=WorkerLimits(startup_s=120, per_shape_s=60))
    candidate = REPO / "tests/redteam/candidates/exits_asking_for_a_rerun.py"
    result = evaluate_candidate(problem, CandidateSpec.file(candidate), options)
    assert len(result.shapes) >= 2 and {s.status for s in result.shapes} == {"crashed"}, \
        [(s.shape_id, s.status) for s in result.shapes]
    assert all("remaining shapes are not run" in (s.error.message if s.error else "") for s in result.shapes)
