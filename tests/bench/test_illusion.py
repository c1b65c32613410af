"""`aka bench --report illusion`: a naive check passes cheats the hardened evaluator catches."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aka_tui.bench.compare.illusion import render_illusion, run_illusion
from aka_tui.bench.evaluator.evaluate import EvalOptions
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_suite
from tests.conftest import PROBLEMS, REPO


@pytest.mark.slow
def test_illusion_rates(tmp_path: Path) -> None:
    folder = tmp_path / "rms_norm"
    folder.mkdir()
    for name in ("torch_fallback.py", "mutates_input.py"):
        shutil.copy(REPO / "tests/redteam/candidates" / name, folder / name)
    shutil.copy(REPO / "tests/redteam/honest/rms_norm_2d_grid.py", folder / "rms_norm_2d_grid.py")
    options = EvalOptions(device="cpu", tier="smoke", cases=2, cpu_reps=1, input_sets=1,
                          limits=WorkerLimits(startup_s=120, per_shape_s=60))
    report = run_illusion(load_suite(PROBLEMS), tmp_path, options)
    rows = {r.candidate: r for r in report.rows}
    assert all(r.naive_pass for r in report.rows)
    assert rows["mutates_input.py"].hardened_pass is False and "read-only" in rows["mutates_input.py"].why
    assert rows["torch_fallback.py"].hardened_pass and not rows["torch_fallback.py"].real
    assert rows["rms_norm_2d_grid.py"].real
    assert (report.rate("naive_pass"), report.rate("hardened_pass"), report.rate("real")) == (1.0, 2 / 3, 1 / 3)
    assert "naive 100%, hardened 67%, real kernels 33%" in render_illusion(report)
