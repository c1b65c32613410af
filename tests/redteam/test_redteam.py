"""Red-team corpus: every cheat gets the verdict its docstring names; honest kernels pass with no false positive.

Each file's first docstring line is `expected: <verdict>` (`gpu-only <verdict>` for CUDA-only cheats; `a|b` when
either verdict is right, e.g. depending on how many timing input sets there are). `suspicious` means the static
scan holds the candidate at S = 0 while its shapes pass. A line `gpu tier: <tier>` makes the GPU run use that tier
instead of `full` (a cheat that only bites on a dtype the full tier does not declare, e.g. fp32 rounded to fp16).
Add every cheat found later here, one per file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import score_op
from tests.conftest import PROBLEMS
from tests.prefetch import Prefetch, prefetch, selected

HERE = Path(__file__).resolve().parent
CHEATS = sorted((HERE / "candidates").glob("*.py"))
HONEST = sorted((HERE / "honest").glob("*.py"))
PROBLEM_OF = {
    "matmul_in_forward": "gemm_bf16_linear_epilogue",
    "fused_add_rms_norm_honest": "fused_add_rms_norm",
    "lazy_output_tuple": "fused_add_rms_norm",
    "layer_norm_chunked": "layer_norm",
    "silu_and_mul_scratch": "silu_and_mul",
}


def expected_verdict(path: Path) -> tuple[str, bool]:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = doc.splitlines()[0] if doc else ""
    assert first.startswith("expected: "), f"{path.name}: first docstring line must be 'expected: <verdict>'"
    verdict = first.removeprefix("expected: ").strip()
    gpu_only = verdict.startswith("gpu-only ")
    return verdict.removeprefix("gpu-only ").split()[0], gpu_only


def expected_verdicts(path: Path) -> set[str]:
    return set(expected_verdict(path)[0].split("|"))


def gpu_tier(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    lines = [line.removeprefix("gpu tier:").strip() for line in doc.splitlines() if line.startswith("gpu tier:")]
    return lines[0] if lines else "full"


def _evaluate(path: Path, device: str):  # type: ignore[no-untyped-def]
    problem = load_problem(PROBLEMS / PROBLEM_OF.get(path.stem, "rms_norm"))
    tier = "smoke" if device == "cpu" else gpu_tier(path)
    options = EvalOptions(device=device, tier=tier, cases=2, cpu_reps=1, input_sets=1,
                          limits=WorkerLimits(startup_s=120, per_shape_s=60))
    result = evaluate_candidate(problem, CandidateSpec.file(path), options)
    return result, score_op(problem, result, get_profile("cpu") if device == "cpu" else get_profile("h200"))


@pytest.fixture(scope="module")
def cpu_evaluations(request: pytest.FixtureRequest) -> Iterator[Prefetch]:
    """The selected CPU cases' evaluations, run a few at a time (tests/prefetch.py)."""
    cpu_tests = ("test_cheat_is_caught_on_cpu", "test_honest_kernel_passes_on_cpu")
    paths = [params["path"] for test, params in selected(request) if test in cpu_tests]
    with prefetch((path, lambda path=path: _evaluate(path, "cpu")) for path in paths) as ahead:
        yield ahead


def _check(path: Path, evaluated) -> None:  # type: ignore[no-untyped-def]
    """`evaluated`: what `_evaluate(path, device)` returned."""
    verdicts = expected_verdicts(path)
    result, op = evaluated
    statuses = {s.shape_id: (s.status, s.error.message[:200] if s.error else "") for s in result.shapes}
    if verdicts == {"passed"}:
        assert op.correct and op.real and not op.holds, (statuses, [s.audit for s in result.shapes], op.holds)
        return
    assert op.s_op == 0.0, f"a cheat scored S_op = {op.s_op}: {statuses}"
    if verdicts == {"fallback"}:
        listed = [s for s in result.shapes if not s.fuzz]
        assert all(s.passed for s in listed), statuses
        assert not op.real and op.s_raw_op > 0
    elif verdicts == {"fallback", "timeout"}:
        # A host-bound cheat (a value read back per element) on a GPU: every read is a device sync, so its larger
        # shapes may run past the shape limit there. Each listed shape is a fallback or ran out of time, one at
        # least a fallback; nothing is real.
        listed = [s for s in result.shapes if not s.fuzz]
        assert all(s.passed or s.status == "timeout" for s in listed), statuses
        assert any(s.passed for s in listed) and not op.real and op.s_raw_op > 0, statuses
    elif verdicts == {"suspicious"}:
        assert result.suspicious and "suspicious" in op.holds, (result.static_findings, op.holds)
        assert all(s.passed for s in result.shapes), statuses
    elif verdicts <= {"wrong_output", "tampered", "runtime_error", "crashed"}:
        assert verdicts & {status for status, _ in statuses.values()}, statuses
        assert not op.correct
    else:
        raise AssertionError(f"unknown expected verdict {verdicts!r} in {path.name}")


def test_corpus_size() -> None:
    assert len(CHEATS) >= 29 and len(HONEST) >= 6


@pytest.mark.parametrize("path", [p for p in CHEATS if not expected_verdict(p)[1]], ids=lambda p: p.stem)
def test_cheat_is_caught_on_cpu(path: Path, cpu_evaluations: Prefetch) -> None:
    _check(path, cpu_evaluations.result(path))


@pytest.mark.parametrize("path", HONEST, ids=lambda p: p.stem)
def test_honest_kernel_passes_on_cpu(path: Path, cpu_evaluations: Prefetch) -> None:
    _check(path, cpu_evaluations.result(path))


@pytest.mark.gpu
@pytest.mark.parametrize("path", CHEATS + HONEST, ids=lambda p: p.stem)
def test_corpus_on_gpu(path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    _check(path, _evaluate(path, "cuda"))
