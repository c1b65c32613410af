"""A run stopped while the baselines are timed keeps the baseline times already measured.

The peer table runs on a device with a time limit per command; torch.compile's max-autotune can take minutes on
one operator. The baselines of an operator used to come back only when all of its shapes were timed, so a group
stopped at its deadline lost every peer figure of the operator it was on. Each shape is now reported again as
soon as its baselines are timed, and the bench's checkpoint (the `.partial.json` a killed run leaves) carries it.
"""

from __future__ import annotations

from pathlib import Path

from aka_tui.bench.evaluator.evaluate import EvalOptions
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.measure.results import ShapeResult
from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.scoring.bench_report import BenchReport
from aka_tui.executors.suite import run_bench
from tests.conftest import PROBLEMS


def test_checkpoints_carry_each_shapes_baseline_times_before_the_operator_ends(tmp_path: Path) -> None:
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    correct = sorted((PROBLEMS / "silu_and_mul" / "solutions" / "correct").glob("*.py"))[0]
    (candidates / "silu_and_mul.py").write_text(correct.read_text())
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0, compare_eager=True,
                          limits=WorkerLimits(startup_s=120, per_shape_s=120))
    checkpoints: list[BenchReport] = []
    shape_events: list[str] = []

    def progress(op: str, kind: str, data: object) -> None:
        if kind == "shape":
            assert isinstance(data, ShapeResult)
            shape_events.append(data.shape_id)

    report = run_bench(load_suite(PROBLEMS), options, candidates_dir=candidates, ops=["silu_and_mul"],
                       progress=progress, checkpoint=checkpoints.append)
    shapes = [s.shape_id for s in report.results[0].shapes]
    assert len(shapes) >= 2 and all(s.eager_timing is not None for s in report.results[0].shapes)
    # while the operator was still in flight, a checkpoint already held a shape with its eager time ...
    in_flight = [c for c in checkpoints if "(partial:" in c.results[0].candidate]
    timed_early = [[s.shape_id for s in c.results[0].shapes if s.eager_timing is not None] for c in in_flight]
    assert any(timed_early), "no checkpoint before the operator's end carried a baseline time"
    # ... one shape at a time, in the order they were timed, never a shape twice
    assert any(0 < len(t) < len(shapes) for t in timed_early)
    assert all(len(c.results[0].shapes) == len({s.shape_id for s in c.results[0].shapes}) for c in in_flight)
    assert sorted(shape_events) == sorted(shapes)  # progress hears each shape once
