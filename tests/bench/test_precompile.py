"""`--precompile-workers`: a reference whose compile runs on (here: a call that sleeps, as a Python loop that
breaks the graph at every step keeps dynamo busy for minutes on a GPU) is stopped at the per-shape limit and left
to the timed run, the pool goes on with the other shapes, and no compiling process outlives the call."""

from __future__ import annotations

import multiprocessing
import shutil
import time
from pathlib import Path

from aka_tui.bench.evaluator.precompile import precompile

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "compile_threads" / "swish_scale_threads"
SLOW_REFERENCE = '''import time

import torch
from torch import nn


@torch._dynamo.disable
def _keep_busy() -> None:
    time.sleep(120)


class Model(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _keep_busy()
        return x * self.alpha
'''


def test_a_compile_past_the_limit_is_stopped_and_the_pool_goes_on(tmp_path: Path) -> None:
    problem = tmp_path / "slow_compile"
    shutil.copytree(FIXTURE, problem)
    (problem / "reference.py").write_text(SLOW_REFERENCE)
    seen: list[tuple[str, str, str]] = []
    began = time.monotonic()
    outcomes = precompile([(str(problem), "r16_c64"), (str(problem), "no_such_shape")], "cpu", 2,
                          progress=lambda *o: seen.append(o), job_timeout_s=20)
    took = time.monotonic() - began
    by_shape = {shape: error for _, shape, error in outcomes}
    assert by_shape["r16_c64"].startswith("not compiled within 20 s"), by_shape
    assert by_shape["no_such_shape"].startswith("KeyError"), by_shape
    assert sorted(seen) == sorted(outcomes)
    assert took < 60, took
    assert multiprocessing.active_children() == []


def test_the_pool_warms_the_caches_of_the_workers_that_will_read_them(tmp_path: Path, monkeypatch) -> None:
    """A candidates run timed beside torch.compile warms the baselines worker's shared cache, a compile-baseline
    run the compile worker's; max-autotune and the eager peer alone warm nothing."""
    from aka_tui.bench.evaluator.evaluate import EvalOptions
    from aka_tui.executors.suite import precompiled_cache

    assert precompiled_cache("compile", EvalOptions()) == "compile"
    assert precompiled_cache("compile-max-autotune", EvalOptions()) is None
    assert precompiled_cache(None, EvalOptions(compare_compile=True)) == "baselines"
    assert precompiled_cache(None, EvalOptions(compare_eager=True, compare_compile_max=True)) is None
    monkeypatch.setenv("AKA_HOME", str(tmp_path / "home"))
    problem = tmp_path / "warm"
    shutil.copytree(FIXTURE, problem)
    outcomes = precompile([(str(problem), "no_such_shape")], "cpu", 1, cache_kind="baselines")
    assert outcomes[0][2].startswith("KeyError"), outcomes
    sandbox = tmp_path / "home" / "cache" / "sandbox"
    assert [p.name for p in sandbox.iterdir()] == ["shared-baselines"]
