"""The GPU-saturated timing pass on the CPU: sizing, control flow on simulated timers, result records."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from aka_tui.bench.measure import timing
from aka_tui.bench.measure.results import CandidateResult, ShapeResult, TimingStats
from aka_tui.bench.measure.timing import (
    SATURATED_MAX_REPS,
    SATURATED_MAX_SLEEP_MS,
    SLEEP_MARGIN,
    Timers,
    escaped_work,
    plan_saturated_pass,
)

REPO = Path(__file__).resolve().parents[2]


def test_plan_sleep_outlasts_the_host_enqueue_and_stays_capped() -> None:
    plan = plan_saturated_pass(0.13, first_pass_reps=200)  # layer_norm under load: ~130 µs per call on the host
    assert plan.reps == SATURATED_MAX_REPS and plan.note == ""
    assert plan.sleep_ms >= SLEEP_MARGIN * plan.reps * 0.13
    assert plan.sleep_ms <= SATURATED_MAX_SLEEP_MS
    slow = plan_saturated_pass(2.0, first_pass_reps=200)  # the sleep cap limits the reps
    assert 5 <= slow.reps < SATURATED_MAX_REPS and slow.sleep_ms <= SATURATED_MAX_SLEEP_MS
    assert slow.sleep_ms >= SLEEP_MARGIN * slow.reps * 2.0
    assert plan_saturated_pass(0.05, first_pass_reps=12).reps == 12  # never more calls than the first pass
    hopeless = plan_saturated_pass(30.0, first_pass_reps=10)
    assert hopeless.reps == 0 and "do not fit" in hopeless.note


def test_plan_retries_with_more_sleep_per_call_and_fewer_calls() -> None:
    plans = [plan_saturated_pass(0.1, 200, attempt) for attempt in range(3)]
    assert [p.reps for p in plans] == [60, 30, 15]
    ratios = [p.sleep_ms / (p.reps * 0.1) for p in plans]
    assert ratios[0] < ratios[1] < ratios[2]


class _Event:
    def __init__(self, enable_timing: bool = True) -> None:
        self.t: float | None = None


class _SimulatedGpu:
    """A GPU timeline in ms: sleeps and kernels advance it, events read it; `wakes` answers query() per pass."""

    def __init__(self, kernel_ms: float, ms_per_cycle: float, wakes: list[bool] | None) -> None:
        self.now, self.kernel_ms, self.ms_per_cycle = 0.0, kernel_ms, ms_per_cycle
        self.wakes = list(wakes or [])
        self.sleeps: list[int] = []
        self.calls: list[int] = []

    def timers(self, with_sleep: bool = True) -> Timers:
        def record(event: _Event) -> None:
            event.t = self.now

        def sleep(cycles: int) -> None:
            self.sleeps.append(cycles)
            self.now += cycles * self.ms_per_cycle

        def query(event: _Event) -> bool:
            return self.wakes.pop(0)

        return Timers(lambda: 0.0, _Event, lambda s, e: e.t - s.t, record, lambda: None, query,
                      sleep if with_sleep else None)

    def fn(self, inputs: dict) -> None:
        self.calls.append(inputs["i"])
        self.now += self.kernel_ms


@pytest.fixture(autouse=True)
def _one_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(timing, "_SLEEP_MS_PER_CYCLE", {})


def test_saturated_pass_retries_until_the_host_outpaces_the_sleep() -> None:
    gpu = _SimulatedGpu(kernel_ms=0.04, ms_per_cycle=5e-7, wakes=[True, False])  # woke once, then saturated
    sets = [{"i": 0}, {"i": 1}, {"i": 2}]
    times, sleep_ms, note = timing._saturated_pass(gpu.fn, sets, gpu.timers(), torch.zeros(4), 0.1, 200)
    assert note == "" and times is not None
    second = plan_saturated_pass(0.1, 200, attempt=1)
    assert len(times) == second.reps and all(t == pytest.approx(0.04) for t in times)
    assert sleep_ms == pytest.approx(second.sleep_ms, rel=1e-3)  # cycles from the calibrated rate
    assert len(gpu.sleeps) == 1 + 3 + 2  # kernel load, 3 calibration runs, 2 attempts
    assert gpu.calls[-3:] == [(second.reps - 3 + k) % 3 for k in range(3)]  # inputs rotate as in the first pass
    assert timing._SLEEP_MS_PER_CYCLE == {0: pytest.approx(5e-7)}


def test_saturated_pass_gives_up_and_says_why() -> None:
    gpu = _SimulatedGpu(kernel_ms=0.04, ms_per_cycle=5e-7, wakes=[True] * 3)
    times, sleep_ms, note = timing._saturated_pass(gpu.fn, [{"i": 0}], gpu.timers(), torch.zeros(4), 0.1, 200)
    assert times is None and sleep_ms is None and "3 attempts" in note and "host-bound" in note
    gpu = _SimulatedGpu(kernel_ms=0.04, ms_per_cycle=5e-7, wakes=[])
    no_sleep = gpu.timers(with_sleep=False)
    times, _, note = timing._saturated_pass(gpu.fn, [{"i": 0}], no_sleep, torch.zeros(4), 0.1, 200)
    assert times is None and "_sleep unavailable" in note and gpu.calls == []


def test_escaped_work_reads_the_host_bound_pass() -> None:
    # Host-bound pass: 0.10 ms events, 0.20 ms wall; saturated pass: 0.04 ms. Honest: must not be flagged
    # (comparing the wall time with the saturated median would be).
    honest = TimingStats(0.04, 0.035, 0.038, 0.042, 60, 3, "cuda_events", 1 << 27, wall_ms_per_call=0.20,
                         flush_ms=0.033, saturated=True, host_bound_median_ms=0.10)
    assert not escaped_work(honest)
    side_stream = TimingStats(0.004, 0.004, 0.004, 0.004, 60, 3, "cuda_events", 1 << 27, wall_ms_per_call=1.2,
                              flush_ms=0.025, saturated=True, host_bound_median_ms=0.004)
    assert escaped_work(side_stream)


def test_timing_stats_round_trip_and_old_records() -> None:
    stats = TimingStats(0.04, 0.035, 0.038, 0.042, 60, 3, "cuda_events", 1 << 27, 0.2, 0.033, True, 0.094, 0.034,
                        0.058, 0.117, 200, 0.11, 13.5, "")
    assert TimingStats.from_json(json.loads(json.dumps(asdict(stats)))) == stats
    shape = ShapeResult("s", "passed", [1], timing=stats, eager_timing=TimingStats(1, 1, 1, 1, 10, 3, "perf_counter", 0))
    result = CandidateResult("p", "cand.py", True, [shape])
    assert CandidateResult.from_json(json.loads(json.dumps(result.to_json()))) == result
    old = {"median_ms": 0.094, "min_ms": 0.034, "p20_ms": 0.058, "p80_ms": 0.117, "reps": 200, "input_sets": 3,
           "timer": "cuda_events", "l2_flush_bytes": 104857600, "wall_ms_per_call": 0.13, "flush_ms": 0.033}
    loaded = ShapeResult.from_json({"shape_id": "s", "status": "passed", "seeds": [1], "timing": old}).timing
    assert loaded is not None and loaded.median_ms == 0.094 and not loaded.saturated
    assert loaded.host_bound_median_ms is None and loaded.saturation_note == ""
    assert TimingStats.from_json(old | {"a_field_from_the_future": 1}).median_ms == 0.094


def test_stored_reports_still_load() -> None:
    report = json.loads((REPO / "docs/benchmarks/2026-11-29-h200-kb-kernels-run1.json").read_text())
    results = [CandidateResult.from_json(r) for r in report["results"]]
    timed = [s.timing for r in results for s in r.shapes if s.timing]
    assert timed and all(not t.saturated and t.host_bound_median_ms is None for t in timed)


def test_a_host_bound_honest_call_is_not_escaped_work() -> None:
    # Measured on the H200 (sampling_top_k_top_p, dsv3_b64_v129280, a cold run): 0.536 ms by events, 0.033 ms
    # flush, 1.332 ms wall per call, all of it the host issuing calls; once per call is issued, nothing waits.
    host_bound = TimingStats(0.2, 0.2, 0.2, 0.21, 60, 3, "cuda_events", 1 << 27, wall_ms_per_call=1.332,
                             flush_ms=0.033, saturated=True, host_bound_median_ms=0.536, host_enqueue_ms=1.3317)
    assert not escaped_work(host_bound)
    # The same host time with side-stream work still pending after the host is done: 2 ms a call.
    side_stream = TimingStats(0.2, 0.2, 0.2, 0.21, 60, 3, "cuda_events", 1 << 27, wall_ms_per_call=3.3,
                              flush_ms=0.033, saturated=True, host_bound_median_ms=0.536, host_enqueue_ms=1.33)
    assert escaped_work(side_stream)
