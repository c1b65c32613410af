"""A remote executor's results are scored against the profile of the GPU that measured each (none detected here)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

from aka_tui.bench.evaluator.evaluate import EvalOptions, evaluate_candidate
from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.report import render_text
from aka_tui.executors.base import EvalJob, JobOutcome, ShapeCallback
from aka_tui.executors.suite import run_bench
from tests.conftest import PROBLEMS
from tests.prefetch import prefetch


class TwoModelCluster:
    """Evaluates on this CPU but reports the results as measured on an H200 and an A100 elsewhere."""

    name = "fake-remote"
    remote = True
    device = "cuda"

    def describe(self) -> list[dict[str, Any]]:
        return [{"node": "a", "name": "NVIDIA H200"}, {"node": "b", "name": "NVIDIA A100"}]

    def cancel(self) -> None:
        pass

    def run(self, jobs: list[EvalJob], on_shape: ShapeCallback | None = None) -> Iterator[JobOutcome]:
        placed = list(zip(jobs, ["h200", "a100"]))
        work = [(model, lambda job=job: evaluate_candidate(job.problem, job.spec, replace(job.options, device="cpu")))
                for job, model in placed]
        with prefetch(work) as evaluations:  # the two "nodes" side by side (tests/prefetch.py)
            for job, model in placed:
                result = evaluations.result(model)
                result.provenance.update(device="cuda", hardware_profile=model)
                yield JobOutcome(job, result, {"node": model}, profile=get_profile(model) if model == "h200" else None)


def test_each_result_uses_its_gpus_profile_and_mixing_is_flagged() -> None:
    options = EvalOptions(device="cuda", tier="smoke", cases=1, cpu_reps=1, input_sets=1)
    report = run_bench(load_suite(PROBLEMS), options, baseline="eager", ops=["rms_norm", "silu_and_mul"],
                       executor=TwoModelCluster())  # no local GPU: nothing may be detected on this machine
    assert report.device == "cuda" and report.mixed_hardware == ["a100", "h200"]
    assert report.hardware.name in ("a100", "h200")
    by_op = {o.problem: o for o in report.ops}
    h200, a100 = get_profile("h200"), get_profile("a100")
    for op, profile in (("rms_norm", h200), ("silu_and_mul", a100)):
        shape = by_op[op].shapes[0]
        entry = next(r for r in report.results if r.problem == op).shapes[0].roofline
        assert entry is not None
        t_sol_ms = max(entry["flops"] / profile.peak_flops_per_s(entry["path"]),
                       (entry["bytes_read"] + entry["bytes_written"]) / profile.bandwidth_bytes_per_s) * 1e3
        assert abs(shape.t_sol_ms - t_sol_ms) <= 1e-9 + 1e-6 * t_sol_ms, op
    assert "GPUs of several models" in render_text(report)


def test_a_checkpoint_after_every_shape_keeps_an_unfinished_operators_shapes() -> None:
    """A run killed inside an operator keeps the shapes that operator had finished (the partial report)."""
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1)
    suite = load_suite(PROBLEMS)
    n = len(suite.problems["rms_norm"].shapes_for("smoke"))
    assert n >= 2
    seen: list[list[tuple[str, str, int]]] = []
    report = run_bench(suite, options, baseline="eager", ops=["rms_norm"],
                       checkpoint=lambda r: seen.append([(x.problem, x.candidate, len(x.shapes)) for x in r.results]))
    assert seen == [[("rms_norm", f"eager (partial: {k} of {n} shapes)", k)] for k in range(1, n + 1)] + \
        [[("rms_norm", "eager", n)]]
    assert len(report.results[0].shapes) == n
