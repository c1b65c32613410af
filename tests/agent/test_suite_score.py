"""`aka sessions --score`: the incumbents of recorded sessions scored as one suite run (nothing re-run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aka_tui.agent.suite_score import score_sessions
from aka_tui.bench.problem.lookup import default_suite_dir, load_suite
from aka_tui.cli import main
from aka_tui.record.events import read_events
from aka_tui.record.listing import EXAMPLES_DIR


@pytest.fixture()
def sessions(tmp_path: Path) -> Path:
    out = tmp_path / "sessions"
    for name in ("rms_norm-example", "silu_and_mul-example"):
        shutil.copytree(EXAMPLES_DIR / name, out / name)
    return out


def _last_accepted_s(session: Path) -> float:
    events, _ = read_events(session / "events.jsonl")
    return [e.data["s_op"] for e in events if e.kind == "candidate_evaluated" and e.data.get("accepted")][-1]


def test_incumbents_score_as_the_loop_scored_them(sessions: Path) -> None:
    suite = load_suite(default_suite_dir())
    report, outcomes, warnings = score_sessions(sessions, suite, "smoke", ["rms_norm", "silu_and_mul"])
    assert not [w for w in warnings if "several GPU models" in w]
    by_op = {o.problem: o for o in report.ops}
    for name in ("rms_norm", "silu_and_mul"):
        # same result, same weights and profile: the suite score reproduces what the loop accepted on
        assert by_op[name].s_op == pytest.approx(_last_accepted_s(sessions / f"{name}-example"), rel=1e-9)
        assert by_op[name].real
    facts = {o.problem: o for o in outcomes}
    assert facts["rms_norm"].baseline_s_raw is not None and facts["rms_norm"].accepted_iteration is not None
    assert report.aggregate.correct_and_real_rate == 1.0


def test_problems_without_a_session_score_zero_and_no_accepted_candidate_counts_as_none(sessions: Path) -> None:
    session = sessions / "silu_and_mul-example"
    lines = (session / "events.jsonl").read_text().splitlines()
    kept = [ln for ln in lines if '"accepted": true' not in ln and "candidate_accepted" not in ln]
    (session / "events.jsonl").write_text("\n".join(kept) + "\n")
    report, outcomes, _ = score_sessions(sessions, load_suite(default_suite_dir()), "smoke",
                                         ["rms_norm", "silu_and_mul", "rope"])
    by_op = {o.problem: o for o in report.ops}
    assert by_op["rope"].s_op == 0.0 and by_op["silu_and_mul"].s_op == 0.0 and by_op["rms_norm"].s_op > 0
    assert {o.problem for o in outcomes} == {"rms_norm", "silu_and_mul"}  # rope has no session at all
    assert report.aggregate.correct_and_real_rate == pytest.approx(1 / 3)


def test_cli_prints_before_after_and_writes_reports(sessions: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sessions", "--score", "--sessions", str(sessions), "--ops", "rms_norm,silu_and_mul", "--tier", "smoke"]
    assert main(args + ["--out", str(tmp_path / "r"), "--name", "s"]) == 0
    out = capsys.readouterr().out
    assert "before S_raw (eager)" in out and "after S_op" in out and "S_agg = " in out
    data = json.loads((tmp_path / "r" / "s.json").read_text())
    assert [r["problem"] for r in data["results"]] == ["rms_norm", "silu_and_mul"]
    assert main(["sessions", "--score", "--sessions", str(tmp_path / "nowhere")]) == 2
    assert "no sessions directory" in capsys.readouterr().err
    assert main(args[:4] + ["--ops", "no_such_op"]) != 0
