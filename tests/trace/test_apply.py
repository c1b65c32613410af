"""`aka trace apply` rewrites a copy of the suite: op importance, per-shape weights, provenance, report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.cli import main
from aka_tui.errors import TraceError
from aka_tui.trace.apply import apply_weights, render_apply
from aka_tui.trace.rules import load_rules
from aka_tui.trace.weights import ImportOptions, import_trace, write_weights
from tests.conftest import PROBLEMS
from tests.trace.kineto import KinetoBuilder

OPS = ("rms_norm", "rope", "silu_and_mul")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    for op in OPS:
        shutil.copytree(PROBLEMS / op, root / op)
    return root


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    b = KinetoBuilder()
    t = 0.0
    calls = [("aka:rms_norm:llama3_8b_decode_t256_h4096", 60.0), ("aka:rms_norm:llama3_70b_prefill_t8192_h8192", 30.0),
             ("aka:rms_norm:not_a_suite_shape", 10.0), ("aka:rope:llama3_8b_decode_t256", 50.0),
             ("aka:moe_extra:whatever", 50.0)]
    for name, dur in calls:
        t = b.annotated_call(name, t, [("some_kernel", dur)])
    ext = b.range("cpu_op", "aten::mm", t, 50.0, [[64, 4096], [4096, 6144]])
    b.launch(t + 5.0, ext, "nvjet_tst_64x8_TNT", 100.0)  # rule-mapped GEMM: shape matches no suite id
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(b.trace()))
    doc = import_trace(trace, load_rules(), ImportOptions(coverage=1.0))
    return write_weights(doc, tmp_path / "w")[0]


def test_apply_rewrites_importance_and_shape_weights_with_provenance(suite: Path, weights: Path) -> None:
    doc = json.loads(weights.read_text())
    before_rms = json.loads((suite / "rms_norm/problem.json").read_text())["importance"]
    report = apply_weights(doc, suite)
    total = 300.0
    after = load_suite(suite).problems
    rms = after["rms_norm"]
    assert rms.importance == pytest.approx(100 / total, abs=1e-5)  # fraction; problem.json holds percent
    assert "trace-derived" in rms.importance_provenance and doc["provenance"]["trace_sha256"][:12] in rms.importance_provenance
    full = {s.shape_id: s.weight for s in rms.shapes_for("full")}
    assert full["llama3_8b_decode_t256_h4096"] == pytest.approx(0.6 / 0.9, abs=1e-5)  # normalised by the loader
    assert full["llama3_70b_prefill_t8192_h8192"] == pytest.approx(0.3 / 0.9, abs=1e-5)
    assert full["qwen3_32b_prefill_t4096_h5120"] == 0.0
    assert {s.weight for s in rms.shapes_for("smoke")} == {0.5}  # another tier: untouched
    raw = json.loads((suite / "rms_norm" / "shapes.json").read_text())
    assert "weight_provenance" in raw["llama3_8b_decode_t256_h4096"] and "weight_provenance" not in raw["smoke_t7_h1000_fp16"]
    meta = json.loads((suite / "rms_norm" / "problem.json").read_text())
    assert meta["importance_trace"]["trace_sha256"] == doc["provenance"]["trace_sha256"]
    by_op = {c.op: c for c in report.changes}
    assert by_op["rms_norm"].unmatched == {"not_a_suite_shape": pytest.approx(0.1)}
    assert by_op["rms_norm"].before == pytest.approx(before_rms, abs=1e-9)
    assert set(report.not_in_suite) == {"moe_extra", "gemm_bf16_linear_epilogue"}
    assert report.not_in_trace == ["silu_and_mul"]
    text = render_apply(report)
    assert "not_a_suite_shape (0.100)" in text and "moe_extra" in text and "silu_and_mul" in text
    assert json.loads((suite / "silu_and_mul" / "problem.json").read_text()) == json.loads(
        (PROBLEMS / "silu_and_mul" / "problem.json").read_text())


def test_dry_run_writes_nothing_and_cpu_weights_need_a_flag(suite: Path, weights: Path, tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in suite.rglob("*.json")}
    report = apply_weights(json.loads(weights.read_text()), suite, dry_run=True)
    assert report.written == [] and {p: p.read_bytes() for p in suite.rglob("*.json")} == before
    doc = json.loads(weights.read_text())
    doc["provenance"]["time_source"] = "cpu"
    with pytest.raises(TraceError, match="--allow-cpu"):
        apply_weights(doc, suite)


def test_cli_apply_prints_the_before_after_table(suite: Path, weights: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "apply", str(weights), "--suite", str(suite)]) == 0
    out = capsys.readouterr().out
    assert "before %" in out and "after %" in out and "rms_norm" in out and "rewrote" in out
    assert main(["problems", "--suite", str(suite)]) == 0  # the rewritten suite still loads
