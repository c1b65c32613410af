"""The shipped H200 trace reproduces the suite's weights: import → the applied problem weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.trace.rules import load_rules
from aka_tui.trace.weights import ImportOptions, import_trace
from tests.conftest import PROBLEMS, REPO

TRACE = REPO / "traces/2026-11-29-h200-aka-serving-mix-v1.json.gz"
RECORDED = REPO / "docs/benchmarks/trace-weights-h200/trace_weights.json"


@pytest.fixture(scope="module")
def imported() -> dict:
    options = ImportOptions(basis="roofline", launch_floor_us=3.38, suite_dir=PROBLEMS)
    return import_trace(TRACE, load_rules([], defaults=True), options)


def test_import_reproduces_the_recorded_and_applied_weights(imported: dict) -> None:
    recorded = json.loads(RECORDED.read_text())
    assert imported["provenance"]["trace_sha256"] == recorded["provenance"]["trace_sha256"]
    assert {op: o["importance"] for op, o in imported["ops"].items()} == pytest.approx(
        {op: o["importance"] for op, o in recorded["ops"].items()})
    suite = load_suite(PROBLEMS)
    total = sum(p.importance for p in suite.problems.values())
    for op, o in imported["ops"].items():
        problem = suite.problems[op]
        assert 100 * problem.importance / total == pytest.approx(o["importance"], abs=2e-3), op
        kept = {sid: s["weight"] for sid, s in o["shapes"].items()}
        full = {sid: s.weight for sid, s in problem.shapes.items() if s.tier == "full"}
        assert {sid: w for sid, w in full.items() if w > 0} == pytest.approx(
            {sid: w / sum(kept.values()) for sid, w in kept.items()}, abs=1e-4), op


def test_coverage_rule_and_full_attribution_on_the_h200_trace(imported: dict) -> None:
    prov = imported["provenance"]
    assert prov["time_source"] == "gpu" and prov["basis"] == "roofline" and prov["roofline_profile"] == "h200"
    assert imported["unknown_share"] == 0.0 and prov["not_retimed_us"] == {}
    assert len(imported["ops"]) == 22
    for op, o in imported["ops"].items():
        assert o["covered_share"] >= 0.9 - 1e-9, op
        smallest_kept = min(s["time_us"] for s in o["shapes"].values())
        assert all(share * o["time_us"] <= smallest_kept + 1e-6 for share in o["dropped_shapes"].values()), op


def test_observed_basis_is_dominated_by_the_naive_references(imported: dict) -> None:
    # Why the suite uses the roofline basis: measured time of our eager references over-weights the ops
    # whose references are far from their roofline (attention prefill's reference is ~90x off it).
    observed = import_trace(TRACE, load_rules([], defaults=True), ImportOptions())
    assert observed["ops"]["attention_prefill_varlen"]["importance"] > 3 * imported["ops"]["attention_prefill_varlen"]["importance"]
    assert observed["ops"]["gemm_bf16_linear_epilogue"]["importance"] < imported["ops"]["gemm_bf16_linear_epilogue"]["importance"] / 3


def test_unknown_kernels_are_reported_without_annotations_or_rules(tmp_path: Path) -> None:
    import gzip

    data = json.loads(gzip.decompress(TRACE.read_bytes()))
    data["traceEvents"] = [e for e in data["traceEvents"]
                           if e.get("cat") not in ("user_annotation", "gpu_user_annotation")]
    stripped = tmp_path / "no-annotations.json"
    stripped.write_text(json.dumps(data))
    doc = import_trace(stripped, load_rules([], defaults=False), ImportOptions())
    assert doc["ops"] == {} and doc["unknown_share"] == pytest.approx(1.0)
    assert doc["unknown"] and doc["unknown"][0]["share"] > 0
