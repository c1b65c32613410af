"""Regression: a baseline's own threads are never blamed on the candidate.

With `--compare-compile` the honest fp8 GEMM was reported `tampered: background thread(s) running after timing:
subproc_worker_timer`: inductor's compile workers, started by the torch.compile baseline timed in the candidate's
worker, kept starting threads during the candidate's next calls. Baselines are now timed in a worker of their
own. The fixture's reference starts such a pool when compiled (tests/data/compile_threads); before the fix this
test failed with exactly that verdict.
"""

from __future__ import annotations

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem
from tests.conftest import CANDIDATES, DATA


@pytest.mark.slow
def test_compile_baseline_threads_are_not_blamed_on_the_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    # The workers inherit TORCHINDUCTOR_* (the sandbox's allow-list). Inductor compiles in this process, not in a
    # pool of its own (the fixture's reference starts the threads this test is about), and trusts the CPU's
    # vector flags instead of building a probe library per ISA: ~2/3 of a cold CPU compile on 2 cores.
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")
    monkeypatch.setenv("TORCHINDUCTOR_VEC_ISA_OK", "1")
    problem = load_problem(DATA / "compile_threads" / "swish_scale_threads")
    options = EvalOptions(device="cpu", tier="full", cases=1, cpu_reps=2, input_sets=1, fuzz=0, compare_compile=True,
                          limits=WorkerLimits(startup_s=120, per_shape_s=300))
    result = evaluate_candidate(problem, CandidateSpec.file(CANDIDATES / "swish_scale_triton.py"), options)
    shape = result.shapes[0]
    assert shape.status == "passed", shape.error
    assert shape.compile_timing is not None and shape.compile_timing.median_ms > 0
    assert shape.audit is not None and shape.audit.real
    assert result.provenance["checks"]["baselines_in_own_worker"]
