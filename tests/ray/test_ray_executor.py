"""The Ray backend on a two-node cluster (CPU interpreter): same results as the local backend, placement
recorded, shipped code and problems (no shared paths), and no result lost when the worker node dies."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.problem.lookup import load_problem, load_suite
from aka_tui.executors.base import EvalJob
from aka_tui.executors.local import LocalExecutor
from aka_tui.executors.ray_cluster import RayExecutor
from aka_tui.executors.suite import run_bench
from tests.conftest import PROBLEMS
from tests.prefetch import prefetch

pytestmark = pytest.mark.slow
OPS = ["rms_norm", "layer_norm", "silu_and_mul"]


def _options() -> EvalOptions:
    return EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=1)


def _content(result: CandidateResult) -> dict[str, Any]:
    """What must not depend on where a result was produced (everything but timings and placement)."""
    return {
        "problem": result.problem, "candidate": result.candidate, "compiled": result.compiled,
        "findings": result.static_findings,
        "provenance": {k: result.provenance.get(k) for k in ("problem_hash", "tier", "hardware_profile",
                                                              "candidate_sha256", "device")},
        "shapes": [(s.shape_id, s.status, s.fuzz, s.seeds, s.audit.real if s.audit else None,
                    (s.error.stage, s.error.kind, s.error.message) if s.error else None, s.reference_precision,
                    s.max_abs_error, s.roofline) for s in result.shapes],
    }


def test_two_nodes_match_the_local_backend(ray_cluster: Any, candidates: Path) -> None:
    suite = load_suite(PROBLEMS)
    seen: list[tuple[str, str]] = []
    local_run = ("local", lambda: run_bench(suite, _options(), candidates_dir=candidates, ops=OPS,
                                            executor=LocalExecutor("cpu", cpu_workers=2)))
    with prefetch([local_run]) as ahead:  # the local backend's run beside the cluster's (tests/prefetch.py)
        executor = RayExecutor(address=ray_cluster.address, device="cpu")
        assert executor.device == "cpu" and len(executor.describe()) == 2
        remote = run_bench(suite, _options(), candidates_dir=candidates, ops=OPS, executor=executor,
                           progress=lambda op, event, r: seen.append((op, event)))
        local = ahead.result("local")
    assert remote.executor == "ray" and remote.device == "cpu" and remote.mixed_hardware == []
    by_op = {r.problem: r for r in remote.results}
    for result in local.results:
        assert _content(by_op[result.problem]) == _content(result), result.problem
    assert [(o.problem, o.correct, o.real) for o in remote.ops] == [(o.problem, o.correct, o.real) for o in local.ops]
    assert not by_op["silu_and_mul"].shapes[0].passed  # the wrong candidate fails the same way on both
    node_ids = {n["node_id"] for n in executor.describe()}
    for result in remote.results:
        placement = result.provenance["placement"]
        assert placement["executor"] == "ray" and placement["node_id"] in node_ids and placement["node"]
        assert result.candidate == str(candidates / f"{result.problem}.py")  # the driver's path, not the node's
    shapes_seen = [op for op, event in seen if event == "shape"]
    assert sorted(set(shapes_seen)) == sorted(OPS)
    assert len(shapes_seen) == sum(len(r.shapes) for r in remote.results)  # each shape reported once


def test_nodes_import_the_shipped_package(ray_cluster: Any) -> None:
    """aka_tui reaches the node through py_modules: the task and its evaluation worker import that copy."""
    import ray

    executor = RayExecutor(address=ray_cluster.address, device="cpu")

    def where() -> tuple[str, str]:
        import os

        import aka_tui

        return aka_tui.__file__, os.environ.get("PYTHONPATH", "")

    path, pythonpath = ray.get(ray.remote(where).options(runtime_env=executor.runtime_env(), num_cpus=1).remote())
    repo = str(Path(__file__).resolve().parents[2])
    assert not path.startswith(repo) and "runtime_resources" in path, path
    assert str(Path(path).parent.parent) in pythonpath.split(":")  # the worker's child processes see it too


def test_cli_bench_on_the_cluster(ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from aka_tui.cli import main

    code = main(["bench", "--baseline", "eager", "--executor", "ray", "--ray-address", ray_cluster.address,
                 "--device", "cpu", "--ops", "rms_norm", "--cases", "1", "--out", str(tmp_path), "--name", "r"])
    assert code == 0, capsys.readouterr().err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["executor"] == "ray" and report["tier"] == "smoke" and len(report["slots"]) == 2
    assert report["results"][0]["provenance"]["placement"]["executor"] == "ray"


def test_cancel_submits_nothing_more(ray_cluster: Any) -> None:
    executor = RayExecutor(address=ray_cluster.address, device="cpu", gpus=1)  # one evaluation in flight
    jobs = [EvalJob(op, load_problem(PROBLEMS / op), CandidateSpec("eager"),
                    EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1)) for op in OPS]
    outcomes = []
    for outcome in executor.run(jobs):
        outcomes.append(outcome)
        executor.cancel()
    assert [o.job.key for o in outcomes] == [OPS[0]] and [s["key"] for s in executor.started] == [OPS[0]]


SLOW_CALL_S = 0.2


def _slow_rms_norm(tmp_path: Path) -> Path:
    """rms_norm whose reference sleeps on every call: an evaluation then lasts seconds, far longer than the
    driver takes to hear that it started, so the kill below always lands while it runs (with the shipped
    reference's own speed, a loaded machine could finish it before the start event was drained)."""
    folder = tmp_path / "rms_norm"
    shutil.copytree(PROBLEMS / "rms_norm", folder, ignore=shutil.ignore_patterns("solutions"))
    reference = folder / "reference.py"
    text = reference.read_text().replace("import torch\n", "import time\n\nimport torch\n", 1)
    text = text.replace("        ct = torch.promote_types", f"        time.sleep({SLOW_CALL_S})\n"
                        "        ct = torch.promote_types", 1)
    assert "time.sleep" in text
    reference.write_text(text)
    return folder


def test_killing_the_worker_node_loses_no_result(ray_cluster: Any, tmp_path: Path) -> None:
    """The worker node is SIGKILLed while it evaluates; Ray re-runs that task on the head node."""

    executor = RayExecutor(address=ray_cluster.address, device="cpu")
    worker = ray_cluster.list_all_nodes()[-1]
    worker_id = worker.node_id
    problem = load_problem(_slow_rms_norm(tmp_path))
    jobs = [EvalJob(f"rms_norm-{i}", problem, CandidateSpec("eager"),
                    EvalOptions(device="cpu", tier="smoke", cases=2, cpu_reps=2, input_sets=1))
            for i in range(3)]
    killed: list[str] = []
    stop = threading.Event()

    def killer() -> None:
        """As soon as a task reports it started on the worker node (its evaluation takes seconds more), the
        node's processes die as with a lost machine: the task's worker process, then the raylet."""
        while not stop.wait(0.05):
            on_worker = [s for s in list(executor.started) if s["node_id"] == worker_id]
            if on_worker:
                for attempt in on_worker:
                    os.kill(attempt["pid"], signal.SIGKILL)
                ray_cluster.remove_node(worker, allow_graceful=False)
                killed.extend(s["key"] for s in on_worker)
                return

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        outcomes = list(executor.run(jobs, on_shape=lambda job, result: None))
        stop.set()
        thread.join(timeout=30)
        assert killed, "no task ever started on the worker node"
        assert sorted(o.job.key for o in outcomes) == sorted(j.key for j in jobs)
        for outcome in outcomes:
            assert all(s.passed for s in outcome.result.shapes), outcome.job.key
            assert outcome.placement["node_id"] != worker_id  # finished elsewhere
        retried = [s["key"] for s in executor.started if s["key"] in killed and s["node_id"] != worker_id]
        assert sorted(retried) == sorted(killed), executor.started  # two tasks on the node come back in any order
    finally:
        if killed:
            ray_cluster.add_node(num_cpus=1)
