"""The torch.compile max-autotune baseline: as a candidate (`aka eval compile-max-autotune`), as a comparison
timed beside another candidate (`--compare-compile-max-autotune`), and in the scores and reports, where reports
written before it existed still load and rescore.

On the CPU inductor's max-autotune has no GEMM template to benchmark for a weight given as an input (its C++
template wants a constant weight) and keeps the ATen GEMM: the compile runs, and must stay correct.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_tui.bench.measure.session import baseline_model
from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.scoring.bench_report import rescore_report
from aka_tui.bench.scoring.paper_render import render_markdown
from aka_tui.bench.scoring.paper_table import build_subjects, role_of
from aka_tui.bench.scoring.report import render_markdown as report_markdown
from aka_tui.bench.scoring.report import render_text
from aka_tui.cli import main
from tests.conftest import PROBLEMS, REPO

GEMM = "gemm_bf16_linear_epilogue"
SMOKE_SHAPE = "smoke_m7_n96_k80_gelu_bias"  # float32 GEMM + bias + gelu_tanh: a GEMM for max-autotune to consider
OLD_REPORT = REPO / "docs/benchmarks/2026-11-29-h200-kb-kernels-run1.json"  # eager timed beside, nothing else


@pytest.fixture
def fast_inductor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers inherit TORCHINDUCTOR_*: compile in-process and trust the CPU's vector flags (no probe build)."""
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")
    monkeypatch.setenv("TORCHINDUCTOR_VEC_ISA_OK", "1")


def _one_shape_suite(tmp_path: Path) -> Path:
    """A suite of the GEMM problem with its float32 smoke shape alone (one compile per baseline)."""
    suite = tmp_path / "suite"
    shutil.copytree(PROBLEMS / GEMM, suite / GEMM)
    shapes_path = suite / GEMM / "shapes.json"
    shapes = json.loads(shapes_path.read_text())
    shapes_path.write_text(json.dumps({SMOKE_SHAPE: shapes[SMOKE_SHAPE]}))
    return suite


def test_the_baseline_kinds_compile_in_their_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(torch, "compile", lambda model, **kwargs: calls.append(kwargs) or model)
    model = torch.nn.Linear(2, 2)
    assert baseline_model("eager", model) is model
    baseline_model("compile", model)
    baseline_model("compile-max-autotune", model)
    # max-autotune's kernels without its CUDA graphs, whose per-call input copies would be timed as the peer's
    assert calls == [{"mode": None, "dynamic": False}, {"mode": "max-autotune-no-cudagraphs", "dynamic": False}]


@pytest.mark.slow
def test_eval_compile_max_autotune_is_correct_on_a_smoke_gemm(tmp_path: Path, fast_inductor: None,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    rc = main(["eval", "compile-max-autotune", "--suite", str(_one_shape_suite(tmp_path)), "--problem", GEMM,
               "--device", "cpu", "--cases", "1", "--json", str(out)])
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    shape = result["shapes"][0]
    assert rc == 0, printed
    assert result["candidate"] == "compile-max-autotune"
    assert shape["shape_id"] == SMOKE_SHAPE and shape["status"] == "passed", shape["error"]
    assert shape["timing"]["median_ms"] > 0
    assert shape["audit"]["reason"] == "PyTorch reference (compile-max-autotune baseline)"
    # inductor compiled in the worker (into the baseline's own cache), not an eager fallback
    from aka_tui.paths import aka_home

    cache = aka_home() / "cache" / "sandbox" / "shared-compile-max-autotune" / "inductor"
    assert list(cache.glob("fxgraph/*/*")), f"no compiled graph in {cache}"


@pytest.mark.slow
def test_bench_compare_max_autotune_records_the_timing_and_reports_the_speedup(
        tmp_path: Path, fast_inductor: None, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "run", "--suite", str(_one_shape_suite(tmp_path)), "--baseline", "eager", "--device", "cpu",
               "--cases", "1", "--compare-compile-max-autotune", "--out", str(tmp_path), "--name", "b"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    report = json.loads((tmp_path / "b.json").read_text())
    shape = report["results"][0]["shapes"][0]
    assert shape["status"] == "passed", shape["error"]
    assert shape["compile_max_timing"]["median_ms"] > 0 and shape["compile_timing"] is None
    op = report["ops"][0]
    expected = shape["compile_max_timing"]["median_ms"] / shape["timing"]["median_ms"]
    assert op["speedup_vs_compile_max"] == pytest.approx(expected)
    assert op["shapes"][0]["speedup_vs_compile_max"] == pytest.approx(expected)
    assert report["aggregate"]["fast_1_vs_compile_max"] is not None
    assert "vs max-autotune" in printed and "vs compile " not in printed  # only the baseline that was timed
    assert "fast_1 vs torch.compile max-autotune" in printed
    assert f"{expected:.2f}" in printed
    assert "vs max-autotune" in (tmp_path / "b.md").read_text()


def _with_max_autotune(data: dict[str, Any], factor: float) -> dict[str, Any]:
    """The stored report as if torch.compile max-autotune had been timed beside it, `factor` times slower."""
    data = json.loads(json.dumps(data))
    for result in data["results"]:
        for shape in result["shapes"]:
            if shape.get("timing"):
                shape["compile_max_timing"] = dict(shape["timing"], median_ms=shape["timing"]["median_ms"] * factor)
    return data


def test_an_old_report_without_max_autotune_still_rescores_and_renders_narrow() -> None:
    data = json.loads(OLD_REPORT.read_text())
    assert not any("compile_max_timing" in s for r in data["results"] for s in r["shapes"])
    report = rescore_report(data, load_suite(PROBLEMS))
    assert report.ops and all(o.speedup_vs_compile_max is None for o in report.ops)
    assert report.aggregate.fast_1_vs_compile_max is None
    assert report.aggregate.fast_1_vs_eager is not None  # what it did time is still scored
    text = render_text(report)
    assert "vs max-autotune" not in text and "max-autotune" not in report_markdown(report)
    assert "| vs max-autotune |" not in render_markdown(build_subjects([data], {}), None)


def test_a_report_with_max_autotune_scores_and_renders_the_speedup() -> None:
    data = _with_max_autotune(json.loads(OLD_REPORT.read_text()), 1.5)
    report = rescore_report(data, load_suite(PROBLEMS))
    correct = [o for o in report.ops if o.correct]
    assert correct and all(o.speedup_vs_compile_max == pytest.approx(1.5) for o in correct)
    assert all(o.speedup_vs_compile_max is None for o in report.ops if not o.correct)
    wins = sum(o.correct and o.real for o in report.ops)
    assert report.aggregate.fast_1_vs_compile_max == pytest.approx(wins / len(report.ops))
    assert "vs max-autotune" in render_text(report)
    assert "| vs max-autotune |" in report_markdown(report)
    stored = json.loads(json.dumps(report.to_json()))
    subject = build_subjects([stored], {})[0]
    assert all(r.vs_compile_max == pytest.approx(1.5) for r in subject.rows if r.correct)
    assert "| vs max-autotune |" in render_markdown([subject], None)


def test_a_max_autotune_baseline_report_is_its_own_subject() -> None:
    assert role_of("baseline:compile-max-autotune") == "compile-max-autotune"
    assert role_of("baseline:compile-max-autotune (rescored)") == "compile-max-autotune"
    assert role_of("baseline:compile (partial)") == "compile"
    assert role_of("x", [{"candidate": "compile-max-autotune"}]) == "compile-max-autotune"
    assert role_of("x", [{"candidate": "compile"}, {"candidate": "a.py"}]) == "candidates"
    candidates = json.loads(OLD_REPORT.read_text())
    baseline = _with_max_autotune(candidates, 1.0)  # its own timings: the candidates' times, doubled
    for result in baseline["results"]:
        for shape in result["shapes"]:
            if shape.get("timing"):
                shape["timing"] = dict(shape["timing"], median_ms=shape["timing"]["median_ms"] * 2.0)
    baseline["label"] = "baseline:compile-max-autotune"
    mine, theirs = build_subjects([candidates, baseline], {})
    assert theirs.role == "compile-max-autotune" and all(r.vs_compile_max is None for r in theirs.rows)
    assert all(r.vs_compile is None for r in mine.rows)  # no default-mode compile timed or given
    assert all(r.vs_compile_max == pytest.approx(2.0) for r in mine.rows if r.correct)


def test_an_ops_speedup_shows_its_slowest_shape_when_a_weightless_shape_loses() -> None:
    """H200, 2026-12-03: the bf16 GEMM's decode shapes (weight 0 in the suite) ran at 0.93 and 0.86 of
    torch.compile while the weighted figure was 1.01; the table must not hide them."""
    data = json.loads((REPO / "docs/benchmarks/2026-12-03-h200-s18/peers-c-g1.json").read_text())
    report = rescore_report(data, load_suite(PROBLEMS))
    gemm = next(o for o in report.ops if o.problem == "gemm_bf16_linear_epilogue")
    assert gemm.speedup_vs_compile is not None and gemm.speedup_vs_compile >= 1.0
    text = render_text(report)
    assert f"{gemm.speedup_vs_compile:.2f} (min 0.86)" in text and "(min 0.93)" in text  # compile, max-autotune
    assert "its slowest shape" in text and "its slowest shape" in report_markdown(report)
