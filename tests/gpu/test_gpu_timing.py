"""On a CUDA GPU: the GPU-saturated pass keeps host launch latency out of the reported time, and work that
escapes the timed stream is still caught from the host-bound pass."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.measure.timing import Timers, escaped_work, time_cuda
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import score_op
from tests.conftest import PROBLEMS

pytestmark = pytest.mark.gpu

SIDE_STREAM_CHEAT = Path(__file__).resolve().parents[1] / "redteam/candidates/side_stream.py"


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def _copy(x: torch.Tensor, y: torch.Tensor) -> None:
    _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


def _busy_wait_us(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _l2_bytes() -> int:
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))


def test_saturated_pass_leaves_host_launch_latency_out() -> None:
    x = torch.randn(1 << 22, device="cuda", dtype=torch.bfloat16)  # 8 MiB in, 8 MiB out: a few µs on an H200
    y = torch.empty_like(x)

    def forward(_inputs: dict) -> None:
        _busy_wait_us(100)  # a slow Python forward: the GPU drains its queue while the host gets here
        _copy(x, y)

    timers = Timers.capture()
    stats = time_cuda(forward, [{}], timers, _l2_bytes())
    assert stats.saturated, stats.saturation_note
    assert stats.host_bound_median_ms is not None and stats.host_enqueue_ms is not None
    assert stats.host_enqueue_ms >= 0.1 and stats.sleep_ms is not None and stats.sleep_ms > 0
    assert stats.median_ms < 0.5 * stats.host_bound_median_ms, stats
    assert stats.p80_ms - stats.p20_ms <= stats.host_bound_p80_ms - stats.host_bound_p20_ms + 0.005, stats
    assert not escaped_work(stats), stats
    host_bound = time_cuda(forward, [{}], timers, _l2_bytes(), saturate=False)
    assert not host_bound.saturated and host_bound.median_ms == host_bound.host_bound_median_ms
    assert host_bound.median_ms > 2 * stats.median_ms


def test_work_on_a_side_stream_is_still_caught_from_the_host_bound_pass() -> None:
    x = torch.randn(1 << 28, device="cuda", dtype=torch.bfloat16)  # 512 MiB each way: ~0.3 ms or more
    y = torch.empty_like(x)
    side = torch.cuda.Stream()

    def forward(_inputs: dict) -> None:
        with torch.cuda.stream(side):  # no wait either way: the events on the current stream bracket nothing
            _copy(x, y)

    stats = time_cuda(forward, [{}], Timers.capture(), _l2_bytes())
    assert escaped_work(stats), stats


def test_side_stream_corpus_cheat_is_still_tampered() -> None:
    # Also covered by tests/redteam/test_redteam.py::test_corpus_on_gpu[side_stream]; repeated here next to
    # the timing change it must survive.
    problem = load_problem(PROBLEMS / "rms_norm")
    options = EvalOptions(device="cuda", tier="full", cases=2, input_sets=1)
    result = evaluate_candidate(problem, CandidateSpec.file(SIDE_STREAM_CHEAT), options)
    op = score_op(problem, result, get_profile("h200"))
    assert "tampered" in {s.status for s in result.shapes}, [(s.shape_id, s.status, s.error) for s in result.shapes]
    assert op.s_op == 0.0


def test_honest_kernel_is_reported_from_the_saturated_pass() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    candidate = CandidateSpec.file(PROBLEMS / "rms_norm/solutions/correct/triton_rms_norm.py")
    options = EvalOptions(device="cuda", tier="full", shape_ids=["llama3_8b_decode_t256_h4096"], cases=1)
    result = evaluate_candidate(problem, candidate, options)
    timed = [s for s in result.shapes if s.timing is not None]
    assert timed and all(s.passed for s in timed), [(s.shape_id, s.status, s.error) for s in result.shapes]
    for shape in timed:
        t = shape.timing
        assert t.saturated, t.saturation_note
        assert t.host_bound_median_ms is not None and t.median_ms <= 1.2 * t.host_bound_median_ms, t
