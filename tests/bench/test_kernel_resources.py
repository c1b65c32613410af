"""Registers, spills and occupancy of compiled kernels: the occupancy arithmetic, nothing recorded under the
interpreter, and (on a GPU) the real fields of Triton's compiled kernel in an evaluator result."""

from __future__ import annotations

import os

import pytest
import torch

from aka_tui.bench.measure.audit import AtenAuditMode, TritonLaunchRecorder, build_report
from aka_tui.bench.measure.kernel_resources import SmLimits, theoretical_occupancy
from tests.bench.kernels.copy_kernel import copy_kernel
from tests.conftest import PROBLEMS

# An sm_90 SM as the CUDA device properties report it (H100 / H200): 2048 threads, 64 Ki registers, 228 KiB.
SM90 = SmLimits(max_threads=2048, registers=65536, shared_bytes=233472, warp_size=32, compute_major=9)


@pytest.mark.parametrize(("n_regs", "shared_bytes", "num_warps", "expected"), [
    (32, 0, 4, (1.0, 16, "warps")),  # 1024 registers per warp: 64 warps fit, as many as the SM has
    (255, 0, 4, (0.125, 2, "registers")),  # 255 → 8192 per warp: 8 warps, two 4-warp blocks
    (128, 0, 8, (0.25, 2, "registers")),  # 4096 per warp: 16 warps, two 8-warp blocks
    (64, 100_000, 4, (0.125, 2, "shared memory")),  # 233472 // (100000 + 1024) = 2 blocks
])
def test_theoretical_occupancy_on_an_sm90(n_regs: int, shared_bytes: int, num_warps: int,
                                          expected: tuple[float, int, str]) -> None:
    assert theoretical_occupancy(n_regs, shared_bytes, num_warps, SM90) == expected


def test_an_interpreted_launch_records_no_compiled_resources() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the interpreter case")
    recorder = TritonLaunchRecorder()
    recorder.install()
    try:
        audit = AtenAuditMode()
        with recorder.recording(audit):
            x = torch.arange(64, dtype=torch.float32)
            y = torch.empty_like(x)
            copy_kernel[(1,)](x, y, 64, BLOCK=64)
        report = build_report(audit, recorder.launches, "tests.bench.kernels.copy_kernel")
    finally:
        recorder.uninstall()  # the launch patch and the wrapped read-backs (Tensor.tolist: a later capture's)
    assert report.own_kernels == {"copy_kernel": 1}
    assert report.kernel_resources == {}  # no compiled kernel: the app shows "n/a (interpreter)"


@pytest.mark.gpu
def test_a_gpu_evaluation_records_registers_spills_and_occupancy() -> None:
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
    from aka_tui.bench.problem.lookup import load_problem

    problem = load_problem(PROBLEMS / "rms_norm")
    candidate = CandidateSpec.file(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py")
    result = evaluate_candidate(problem, candidate, EvalOptions(device="cuda", tier="smoke", cases=1, fuzz=0))
    timed = [s for s in result.shapes if s.audit is not None]
    assert timed, [(s.shape_id, s.status, s.error) for s in result.shapes]
    for shape in timed:
        resources = shape.audit.kernel_resources
        assert set(resources) == set(shape.audit.own_kernels), (resources, shape.audit.own_kernels)
        for record in resources.values():
            assert 0 < record["n_regs"] <= 255 and record["n_spills"] >= 0 and record["num_warps"] >= 1
            assert 0 < record["occupancy"] <= 1 and record["occupancy_limit"] in ("warps", "registers",
                                                                                    "shared memory")
    data = result.to_json()["shapes"][0]["audit"]["kernel_resources"]
    print("kernel resources:", data)
