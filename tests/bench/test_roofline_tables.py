"""Achieved bandwidth and T_SOL / T from a stored H200 report: the agent's incumbents (`aka sessions --score`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.bench_report import rescore_report
from aka_tui.bench.scoring.roofline_tables import (
    bandwidth_rows,
    largest_full_shape,
    largest_memory_bound,
    main,
    shape_rows,
)
from aka_tui.errors import EvaluationError
from tests.conftest import PROBLEMS, REPO

SCORE = REPO / "docs/benchmarks/2026-11-30-h200-s4-optimize-score.json"
COPY = REPO / "docs/benchmarks/2026-11-30-h200-s4-sweeps/copy-ceiling.json"


def test_the_ops_are_those_memory_bound_at_their_largest_full_shape() -> None:
    suite, profile = load_suite(PROBLEMS), get_profile("h200")
    chosen = largest_memory_bound(suite, profile)
    for op, shape_id, nbytes in chosen:
        problem = suite.problems[op]
        assert all(problem.roofline[s.shape_id].bytes_total <= nbytes for s in problem.shapes_for("full")
                   if s.shape_id in problem.roofline)
        assert bound(problem.roofline[shape_id], profile).bottleneck == "memory"
    missing = {name for name, p in suite.problems.items() if (s := largest_full_shape(p)) is not None
               and bound(p.roofline[s.shape_id], profile).bottleneck == "memory"} - {op for op, _, _ in chosen}
    assert not missing
    assert [op for op, _, _ in largest_memory_bound(suite, profile, ["rms_norm"])] == ["rms_norm"]


def test_tables_from_the_stored_incumbents() -> None:
    """The figures BENCHMARKS.md records for these sessions (silu_and_mul: 176.0 µs, 4.00 TB/s, 94% of the
    calibrated copy, 96% of the same-size copy; paged decode's T_SOL / T 0.697 at its longest context)."""
    suite = load_suite(PROBLEMS)
    report = rescore_report(json.loads(SCORE.read_text()), suite)
    copy = json.loads(COPY.read_text())
    rows = {r[0]: r for r in bandwidth_rows(report, suite, copy["calibrated_copy_tbps"],
                                            {r["op"]: r for r in copy["rows"]})}
    assert rows["silu_and_mul"][1:] == ["llama3_8b_prefill_t8192_i14336", "704.6", "176.0", "4.00", "94%", "4.16",
                                        "96%"]
    assert set(rows) <= {op for op, _, _ in largest_memory_bound(suite, report.hardware)}
    shapes = {r[1]: r for r in shape_rows(report, suite, ["attention_paged_decode"])}
    assert shapes["qwen3_8b_b8_ctx32768"][2] == "memory" and shapes["qwen3_8b_b8_ctx32768"][5] == "0.697"
    s_raw = {s.shape_id: s.s_raw for o in report.ops if o.problem == "attention_paged_decode" for s in o.shapes}
    assert all(float(r[5]) == pytest.approx(s_raw[sid], abs=5e-4) for sid, r in shapes.items())


def test_the_command_prints_both_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SCORE), "--copy", str(COPY), "--shapes-of", "attention_mla_decode"]) == 0
    out = capsys.readouterr().out
    assert "| silu_and_mul | llama3_8b_prefill_t8192_i14336 |" in out and "| attention_mla_decode |" in out
    with pytest.raises(EvaluationError, match="no problem"):
        main([str(SCORE), "--shapes-of", "not_a_problem"])
    with pytest.raises(EvaluationError, match="cannot read"):
        main([str(tmp_path / "missing.json")])
