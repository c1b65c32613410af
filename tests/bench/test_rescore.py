"""`aka bench --rescore`: stored H200 measurements scored again under other weights, nothing re-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.scoring.bench_report import rescore_report
from aka_tui.cli import main
from aka_tui.errors import EvaluationError
from tests.conftest import PROBLEMS, REPO

EAGER = REPO / "docs/benchmarks/2026-11-29-h200-eager-full.json"


def test_rescore_follows_the_suite_weights(tmp_path: Path) -> None:
    data = json.loads(EAGER.read_text())
    suite_dir = tmp_path / "suite"
    shutil.copytree(PROBLEMS, suite_dir)
    for meta_path in suite_dir.glob("*/problem.json"):  # all weight on rms_norm
        meta = json.loads(meta_path.read_text())
        meta["importance"] = 100.0 if meta_path.parent.name == "rms_norm" else 0.0
        meta_path.write_text(json.dumps(meta))
    report = rescore_report(data, load_suite(suite_dir))
    rms = next(o for o in report.ops if o.problem == "rms_norm")
    assert report.aggregate.s_raw_agg == pytest.approx(rms.s_raw_op)
    assert report.aggregate.s_agg == 0.0  # the eager reference is a fallback, whatever the weights
    stored = next(o for o in data["ops"] if o["problem"] == "rms_norm")
    assert rms.s_raw_op != pytest.approx(stored["s_raw_op"])  # the shape weights changed since the run


def test_rescore_cli_merges_partial_reports_and_rejects_bad_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(EAGER.read_text())
    first, second = dict(data), dict(data)
    first["results"] = [r for r in data["results"] if r["problem"] < "m"]
    second["results"] = [r for r in data["results"] if r["problem"] >= "l"]
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    rc = main(["bench", "--rescore", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path),
               "--name", "merged"])
    assert rc == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert sorted(r["problem"] for r in merged["results"]) == sorted(r["problem"] for r in data["results"])
    (tmp_path / "bad.json").write_text("{\"results\": 3}")
    with pytest.raises(EvaluationError, match="not an aka bench report"):
        rescore_report({"results": 3}, load_suite(PROBLEMS))
    assert main(["bench", "--rescore", str(tmp_path / "bad.json"), "--out", str(tmp_path)]) != 0
    assert "not an aka bench report" in capsys.readouterr().err
    (tmp_path / "binary.json").write_bytes(b"\x9a\xff not text")
    for command in (["bench", "--rescore", str(tmp_path / "binary.json"), "--out", str(tmp_path)],
                    ["report", str(tmp_path / "binary.json")]):
        assert main(command) != 0
        err = capsys.readouterr().err
        assert "cannot read report" in err and "Traceback" not in err, err


def test_merge_takes_an_op_from_a_later_report_when_an_earlier_one_had_no_candidate(tmp_path: Path) -> None:
    """A sessions score over a subset of the ops lists the other ops as no_candidate; merged first with a
    full report, it must win only the ops it measured (a subset run merged over an earlier whole-suite run)."""
    s4 = REPO / "docs/benchmarks/2026-11-30-h200-s4-optimize-score.json"
    full = json.loads(s4.read_text())
    subset = json.loads(s4.read_text())
    for r in subset["results"]:
        if r["problem"] != "rms_norm":
            for s in r["shapes"]:
                s.update(status="no_candidate", timing=None)
                s["error"] = {"stage": "compile", "kind": "no_candidate", "message": "no session"}
    (tmp_path / "subset.json").write_text(json.dumps(subset))
    (tmp_path / "full.json").write_text(json.dumps(full))
    assert main(["bench", "--rescore", str(tmp_path / "subset.json"), str(tmp_path / "full.json"), "--out",
                 str(tmp_path), "--name", "merged"]) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    alone = json.loads(s4.read_text())
    assert len(merged["ops"]) == len(alone["ops"])
    assert merged["aggregate"]["s_agg"] == pytest.approx(rescore_report(alone, load_suite(PROBLEMS)).aggregate.s_agg)


def test_fast_1_counts_only_the_ops_a_baseline_timed() -> None:
    """A torch.compile baseline that timed 2 of 20 operators (the H200 run of 2026-12-02, stopped by its time
    limit): fast_1 vs torch.compile is over those 2, not 2 wins out of 20; eager timed all 20."""
    from aka_tui.bench.scoring.paper_table import build_subjects, read_report

    runs = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
    subjects = build_subjects([read_report(runs / "2026-12-02-h200-s12-agent" / "incumbents.json"),
                               read_report(runs / "2026-12-01-h200-atrex" / "atrex-eager.json"),
                               read_report(runs / "2026-12-02-h200-s12-agent" / "compile-partial.json")], {})
    ours = subjects[0].aggregate
    assert ours["fast_1_ops"] == {"vs_eager": 20, "vs_compile": 2, "vs_compile_max": 0}
    assert ours["fast_1_vs_compile"] == 1.0 and ours["fast_1_vs_compile_max"] is None
    assert ours["fast_1_vs_eager"] == pytest.approx(18 / 20)  # the two operators not correct count as losses


def test_a_merged_report_says_which_report_gave_each_op_and_sums_their_wall_times(tmp_path: Path) -> None:
    data = json.loads(EAGER.read_text())
    first, second = dict(data), dict(data)
    first["results"] = [r for r in data["results"] if r["problem"] < "m"]
    second["results"] = [r for r in data["results"] if r["problem"] >= "m"]
    first["wall_s"], second["wall_s"] = 100.0, 23.5
    second["label"] = "baseline:eager (second run)"
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    assert main(["bench", "rescore", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path),
                 "--name", "merged"]) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["wall_s"] == pytest.approx(123.5)
    sources = merged["merged_from"]
    assert [s["wall_s"] for s in sources] == [100.0, 23.5]
    assert sorted(sources[0]["ops"] + sources[1]["ops"]) == sorted(r["problem"] for r in data["results"])
    assert all(op < "m" for op in sources[0]["ops"]) and all(op >= "m" for op in sources[1]["ops"])
    assert " + " in merged["label"] and "second run" in merged["label"]
    md = (tmp_path / "merged.md").read_text()
    assert "123.5 s in 2 merged reports (100.0 + 23.5)" in md
    assert f"s) gave {', '.join(sources[1]['ops'])}" in md
    # scored again on its own, the merged report keeps where its ops came from
    again = rescore_report(merged, load_suite(PROBLEMS))
    assert [s["ops"] for s in again.merged_from] == [s["ops"] for s in sources]
