"""One problem's full-tier shapes split over suite copies, and the part reports merged into one scored report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.scoring.bench_report import merge_shape_parts, rescore_report
from aka_tui.errors import EvaluationError
from aka_tui.executors.shape_split import main, split_shapes
from tests.conftest import PROBLEMS, REPO

EAGER = REPO / "docs/benchmarks/2026-11-29-h200-eager-full.json"


def test_split_gives_each_copy_a_share_of_the_full_shapes(tmp_path: Path) -> None:
    problem = load_suite(PROBLEMS).problems["rms_norm"]
    full = {s.shape_id for s in problem.shapes_for("full")}
    parts = split_shapes(PROBLEMS, "rms_norm", 2, tmp_path)
    assert sorted(parts[0] + parts[1]) == sorted(full) and not set(parts[0]) & set(parts[1])
    for g, mine in enumerate(parts):
        copy = load_suite(tmp_path / f"suite{g}").problems["rms_norm"]
        assert {s.shape_id for s in copy.shapes_for("full")} == set(mine)
        others = {k for k in copy.shapes if k not in full}
        assert others == ({k for k in problem.shapes if k not in full} if g == 0 else set())
    with pytest.raises(EvaluationError, match="no problem"):
        split_shapes(PROBLEMS, "not_a_problem", 2, tmp_path)


def test_merged_parts_score_as_the_whole_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(EAGER.read_text())
    data["results"] = [r for r in data["results"] if r["problem"] in ("rms_norm", "silu_and_mul")]
    parts = []
    for g in range(2):  # rms_norm's shapes split over two parts; silu_and_mul whole in the second
        part = json.loads(json.dumps(data))
        for r in part["results"]:
            r["shapes"] = r["shapes"][g::2] if r["problem"] == "rms_norm" else (r["shapes"] if g else [])
        part["results"] = [r for r in part["results"] if r["shapes"]]
        part["wall_s"] = 10.0 + g
        parts.append(part)
    merged = merge_shape_parts(parts)
    assert merged["wall_s"] == 11.0 and parts[0]["results"][0]["shapes"] != merged["results"][0]["shapes"]
    suite = load_suite(PROBLEMS)
    whole, joined = rescore_report(data, suite), rescore_report(merged, suite)
    assert {o.problem: o.s_raw_op for o in joined.ops} == pytest.approx({o.problem: o.s_raw_op for o in whole.ops})
    for g, part in enumerate(parts):
        (tmp_path / f"part{g}.json").write_text(json.dumps(part))
    assert main(["merge", str(PROBLEMS), str(tmp_path / "merged"), str(tmp_path / "part0.json"),
                 str(tmp_path / "part1.json"), str(tmp_path / "missing.json")]) == 0
    assert "merged from 2 parts" in json.loads((tmp_path / "merged.json").read_text())["label"]
    assert "rms_norm: S_raw_op" in capsys.readouterr().out
