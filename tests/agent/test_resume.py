"""`aka optimize --resume`: a session SIGKILLed mid-iteration continues after its last commit, losing none,
and a session that may not continue here is refused in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_problem
from aka_tui.cli import main
from aka_tui.record.events import read_events
from aka_tui.record.session_repo import SessionRepo
from tests.conftest import PROBLEMS, REPO

# No interleaved re-measurement (recorded in session.json, so the resumed run takes it too): what is asserted is
# where the resumed run continues and what it keeps, not its decisions.
OPTIMIZE = ["optimize", "silu_and_mul", "--device", "cpu", "--tier", "smoke", "--cases", "1", "--no-kb",
            "--no-propose", "--remeasure-rounds", "0"]


def _subjects(path: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(path), "log", "--format=%s", "main"], capture_output=True, text=True)
    return out.stdout.splitlines() if out.returncode == 0 else []


def _shas(path: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(path), "rev-list", "main"], capture_output=True, text=True,
                          check=True).stdout.split()


def _start_and_kill_after_first_candidate(sessions: Path) -> Path:
    proc = subprocess.Popen([sys.executable, "-m", "aka_tui", *OPTIMIZE, "--iterations", "6", "--sessions",
                             str(sessions)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            found = [p for p in sessions.glob("*") if p.is_dir()]
            if found and any(s.startswith("iter 1:") for s in _subjects(found[0])):
                os.killpg(proc.pid, signal.SIGKILL)  # the loop and its evaluation worker, mid-iteration 2
                proc.wait(timeout=30)
                return found[0]
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    raise AssertionError(f"no candidate commit appeared: {proc.stderr.read().decode() if proc.stderr else ''}")


@pytest.mark.slow
def test_sigkill_mid_iteration_then_resume_loses_no_commit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sessions = tmp_path / "sessions"
    path = _start_and_kill_after_first_candidate(sessions)
    before = _shas(path)
    done = SessionRepo.open(path).next_iteration() - 1
    assert done >= 1
    # What a kill can leave besides .work/: a half-written next iteration, a rewritten kernel.py, a staged
    # file, a partial event line and git's index lock.
    half = path / "iterations" / f"{done + 1:04d}"
    half.mkdir(exist_ok=True)
    (half / "kernel.py").write_text("# half-written\n")
    (path / "kernel.py").write_text("# half-written\n")
    with open(path / "events.jsonl", "a") as handle:
        handle.write('{"seq": 999, "ts": 1.0, "kind": "candid')
    (path / ".git" / "index.lock").write_text("")

    assert main(["optimize", "--resume", path.name, "--sessions", str(sessions), "--iterations", "2",
                 "--no-propose"]) == 0
    out = capsys.readouterr().out
    assert f"resuming {path.name} at iteration {done + 1}" in out

    session = SessionRepo.open(path)
    after = _shas(path)
    assert set(before) <= set(after)  # every earlier commit is still in the history
    iterations = [c.iteration for c in session.candidates()]
    assert iterations == list(range(1, done + 3))  # no gap, no duplicate
    assert all(c.author == "aka agent" for c in session.candidates())
    assert any(t.name.startswith("silu_and_mul-best") for t in session.repo.tags)
    events, problems = read_events(path / "events.jsonl")
    assert problems == []  # the partial line was cut before the resumed run appended
    resumed = [e.data for e in events if e.kind == "session_resumed"]
    assert len(resumed) == 1 and resumed[0]["from_iteration"] == done + 1
    assert f"iterations/{done + 1:04d}/kernel.py" in resumed[0]["discarded"]
    evaluated = [int(e.data["iteration"]) for e in events if e.kind == "candidate_evaluated"]
    assert sorted(set(evaluated)) == iterations


class _OneProposal:
    """A proposer with one canned proposal (the loop's protocol, no model)."""

    name = "canned"

    def tactics(self) -> list[str]:
        return ["tile"]

    def propose(self, point: dict[str, object], memory: list[object], bottleneck: object, tactics: object) -> object:
        from aka_tui.agent.offline import Proposal

        return Proposal("# canned\n", "canned", {"i": 3}, {"i": (1, 3)}, "canned")


def test_earlier_attempts_are_the_memory_dropout_sees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import aka_tui.agent.loop as loop_module
    import aka_tui.agent.measure as measure_module
    from aka_tui.agent.loop import AgentLoop, Attempt, LoopConfig
    from aka_tui.agent.offline import Proposal
    from aka_tui.bench.evaluator.evaluate import EvalOptions
    from aka_tui.bench.measure.results import CandidateResult
    from aka_tui.bench.roofline.hardware import get_profile
    from aka_tui.bench.scoring.score import score_op
    from aka_tui.record.listing import EXAMPLES_DIR

    problem, profile = load_problem(PROBLEMS / "silu_and_mul"), get_profile("cpu")
    recorded = CandidateResult.from_json(json.loads(
        (EXAMPLES_DIR / "silu_and_mul-example" / "iterations" / "0001" / "result.json").read_text()))
    monkeypatch.setattr(measure_module, "evaluate_candidate", lambda *args, **kwargs: recorded)  # no worker
    seen: list[list[tuple[int, bool, bool]]] = []
    real_dropout = loop_module.apply_dropout

    def spy(memory, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append([(m.iteration, m.incumbent, m.latest_win) for m in memory])
        return real_dropout(memory, *args, **kwargs)

    monkeypatch.setattr(loop_module, "apply_dropout", spy)
    score = score_op(problem, recorded, profile)
    earlier = [Attempt(1, Proposal("a", "k", {"i": 1}, {}, "one"), score, True, "sha1"),
               Attempt(2, Proposal("b", "k", {"i": 2}, {"i": (1, 2)}, "two"), score, False, "sha2")]
    outcome = AgentLoop(problem, _OneProposal(), profile, EvalOptions(device="cpu", tier="smoke"),
                        LoopConfig(iterations=1, remeasure_rounds=0), tmp_path).run(
        incumbent=earlier[0], first_iteration=3, earlier=earlier)
    assert seen == [[(1, True, True), (2, False, False)]]
    assert [a.iteration for a in outcome.attempts] == [3]


def _fake_session(tmp_path: Path, **meta: object) -> Path:
    problem = load_problem(PROBLEMS / "silu_and_mul")
    base = {"problem": "silu_and_mul", "problem_hash": problem.content_hash, "proposer": "offline", "seed": 0,
            "device": "cpu", "hardware_profile": "cpu", "iterations": 2, "dropout_p": 0.5}
    return SessionRepo.create(tmp_path / "sessions" / "fake", {**base, **meta}).path


@pytest.mark.parametrize(("meta", "message"), [
    ({"problem_hash": "0123456789abcdef"}, "changed since the session was recorded"),
    ({"hardware_profile": "h200"}, "recorded on hardware profile h200"),
])
def test_resume_refuses_a_changed_problem_or_other_hardware(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            meta: dict[str, object], message: str) -> None:
    path = _fake_session(tmp_path, **meta)
    assert main(["optimize", "--resume", str(path), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "--force" in err and len(err.splitlines()) == 1


def test_resume_refuses_a_running_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _fake_session(tmp_path)
    (path / ".work").mkdir()
    (path / ".work" / "owner.pid").write_text(f"{os.getppid()}\n")  # a live process that is not us
    assert main(["optimize", "--resume", str(path)]) == 2
    assert "looks running" in capsys.readouterr().err


def test_resume_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "session.json").write_text("{")
    cases = [(["--resume", "nope", "--sessions", str(tmp_path)], "no session 'nope'"),
             (["--resume", "bad", "--sessions", str(tmp_path)], "unreadable"),
             (["--resume", "rms_norm-example"], "history.bundle")]
    for argv, message in cases:
        assert main(["optimize", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    path = _fake_session(tmp_path)
    monkeypatch.setitem(sys.modules, "git", None)  # GitPython missing
    assert main(["optimize", "--resume", str(path)]) == 2
    err = capsys.readouterr().err
    assert "GitPython is not installed" in err and len(err.strip().splitlines()) == 1
