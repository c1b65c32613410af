"""The hostile-candidate corpus: each case in tests/sandbox/hostile/ runs through the real evaluator and must end
with the verdict its docstring names; after it, nothing outside its work dir changed (its canary home,
session repository and problem copy; the checkout's kb/, problems/ and aka_tui/), no process it started is
alive, no hook it planted ran, the test's server saw no connection, and the fake API key set in this
process's environment appears in no result, output or file, in any encoding, and neither does the private key
in its canary home (a file the evaluator might be led to read back for the case).

All cases run in the bubblewrap sandbox (skipped, with the reason, where bubblewrap cannot run: CI installs it
with scripts/setup.sh); one also runs with `--sandbox none`, where the environment allow-list still holds. Three
cases run through the `aka eval` command line, whose process one of them tries to kill and whose terminal another
tries to drive: no character a terminal acts on (ESC, CSI, carriage return…) reaches the output or the result.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.sandbox.bwrap import resolve_mode
from aka_tui.environment import environment_snapshot
from tests.conftest import REPO
from tests.prefetch import prefetch, selected
from tests.sandbox.harness import (
    CASES,
    HAVE_GIT,
    SHAPE,
    Canary,
    changed,
    expected,
    files_text,
    leaks,
    limits_of,
    repo_snapshot,
    snapshot,
    survivors,
)

MECHANISM, WHY_NOT = resolve_mode("auto")
needs_bwrap = pytest.mark.skipif(MECHANISM != "bwrap", reason=f"bubblewrap cannot run here: {WHY_NOT}")
KEY = "sk-ant-api03-" + secrets.token_urlsafe(40)
CLI_CASES = ("kill_parent", "leaks_key", "terminal_escapes")  # through `aka eval --json`: its own process is the one attacked
# Also with --sandbox none: the key must not reach a candidate even then (the limits' watchdog path without a
# sandbox or a cgroup is covered, faster, by test_sandbox_units.py).
UNSANDBOXED = ("env_secrets",)
# What a terminal acts on (ESC, the 8-bit CSI, carriage return, backspace...): never from a candidate to the person's
# terminal or into a result (tabs and newlines are text).
TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Listener:
    """A TCP and a UDP socket on one local port, counting what reaches them."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.udp.settimeout(0.2)
        self.tcp.settimeout(0.2)
        self.seen: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            for sock in (self.tcp, self.udp):
                try:
                    if sock is self.tcp:
                        conn, peer = sock.accept()
                        conn.close()
                        self.seen.append(f"tcp from {peer}")
                    else:
                        data, peer = sock.recvfrom(4096)
                        self.seen.append(f"udp {data[:40]!r} from {peer}")
                except OSError:
                    continue

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.tcp.close()
        self.udp.close()


@dataclass
class Outcome:
    """One case's run: its result, everything it printed, and the state around it afterwards."""

    result: CandidateResult
    output: str
    canary_changes: list[str]
    survivors: list[int]
    hook_ran: bool
    session_text: str
    canary_text: str
    private_key: str


def _evaluate(path: Path, canary: Canary, case: Path, mode: str, device: str) -> tuple[CandidateResult, str]:
    if case.stem not in CLI_CASES:
        options = EvalOptions(device=device, tier="smoke", cases=1, timing=False, shape_ids=[SHAPE],
                              limits=limits_of(case, mode))
        result = evaluate_candidate(load_problem(canary.problem), CandidateSpec.file(path), options)
        return result, json.dumps(result.to_json())
    out = canary.root / "result.json"
    done = subprocess.run([sys.executable, "-m", "aka_tui", "eval", str(path), "--problem", str(canary.problem),
                           "--shape", SHAPE, "--device", device, "--tier", "smoke", "--cases", "1", "--sandbox", mode,
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=environment_snapshot())
    assert done.returncode in (0, 1), f"aka eval ended with {done.returncode}: {done.stderr[-2000:]}"
    assert "sandbox: bwrap" in done.stdout, done.stdout[-2000:]
    return CandidateResult.from_json(json.loads(out.read_text())), done.stdout + done.stderr + out.read_text()


def run_case(case: Path, mode: str, root: Path, port: int, device: str = "cpu") -> Outcome:
    """One case on `device` in a fresh canary under `root`, and what it left behind."""
    canary = Canary.create(root)
    marker = f"aka-hostile-{secrets.token_hex(6)}"
    path = canary.render(case, port, marker, KEY)
    before = snapshot(canary.root)
    result, output = _evaluate(path, canary, case, mode, device)
    left = survivors(marker)
    changes = [p for p in changed(before, snapshot(canary.root)) if not p.endswith("result.json")]
    session_text = files_text(canary.session)
    if HAVE_GIT:
        from aka_tui.record.session_repo import SessionRepo

        session = SessionRepo.open(canary.session)  # a commit and a checkout: any planted hook would run now
        session.record_candidate(1, "print('after the hostile case')\n", {}, {}, "after")
        session.repo.git.checkout("HEAD", "--", "kernel.py")
        session_text += str(session.repo.git.log("-p", "--all"))
    attacked = "\n".join(files_text(d) for d in (canary.home, canary.problem))  # not candidates/: leaks_key holds it
    return Outcome(result, output, changes, left, (canary.root / "pwned").exists(), session_text, attacked,
                   canary.private_key)


@contextmanager
def hostile_environment() -> Iterator[tuple[Listener, dict[str, str]]]:
    """The fake key and a token in this process's environment, the listening server, the checkout's snapshot."""
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_API_KEY", "AKA_TEST_TOKEN")}
    os.environ["ANTHROPIC_API_KEY"] = KEY
    os.environ["AKA_TEST_TOKEN"] = "tok-" + secrets.token_hex(16)
    listener = Listener()
    try:
        yield listener, repo_snapshot()
    finally:
        listener.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The selected cases' runs, a few at a time, inside `hostile_environment`."""
    modes = {"test_case_in_bwrap": "bwrap", "test_case_without_sandbox": "none"}
    with hostile_environment() as (listener, repo_before):
        jobs = []
        for test, params in selected(request):
            if test in modes:
                case, mode = params["case"], modes[test]
                root = tmp_path_factory.mktemp(f"{case.stem}-{mode}")
                jobs.append(((case, mode), lambda c=case, m=mode, r=root: run_case(c, m, r, listener.port)))
        with prefetch(jobs) as ahead:
            yield {"runs": ahead, "listener": listener, "repo_before": repo_before}


def check(case: Path, mode: str, run: Outcome, listener: Listener, repo_before: dict[str, str]) -> None:
    """Everything a case must satisfy after its run (see the module docstring)."""
    status, fragment = expected(case)
    shapes = {s.shape_id: (s.status, s.error.message if s.error else "") for s in run.result.shapes}
    assert all(s == status for s, _ in shapes.values()), shapes
    assert fragment in "".join(m for _, m in shapes.values()), shapes
    assert run.result.provenance["sandbox"] == mode
    assert run.canary_changes == [], "the case changed files outside its work dir"
    assert not run.hook_ran, "a hook the case planted ran"
    assert changed(repo_before, repo_snapshot()) == [], "the checkout changed"
    assert run.survivors == [], "processes the case started outlived the evaluation"
    assert listener.seen == [], "the case reached the test's server"
    text = json.dumps(run.result.to_json()) + run.output + run.session_text + run.canary_text
    assert leaks(KEY, text) == [] and leaks(os.environ["AKA_TEST_TOKEN"], text) == []
    assert not TERMINAL_CONTROL.search(run.output), "control characters reached the output"
    assert not [t for t in _strings(run.result.to_json()) if TERMINAL_CONTROL.search(t)], \
        "control characters reached the result"
    assert run.private_key not in json.dumps(run.result.to_json()) + run.output + run.session_text, \
        "a file of the person's home was read into the result"


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@needs_bwrap
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stem)
def test_case_in_bwrap(case: Path, corpus: dict[str, Any]) -> None:
    check(case, "bwrap", corpus["runs"].result((case, "bwrap")), corpus["listener"], corpus["repo_before"])


@pytest.mark.parametrize("case", [c for c in CASES if c.stem in UNSANDBOXED], ids=lambda c: c.stem)
def test_case_without_sandbox(case: Path, corpus: dict[str, Any]) -> None:
    run: Outcome = corpus["runs"].result((case, "none"))
    check(case, "none", run, corpus["listener"], corpus["repo_before"])
    assert run.result.provenance["sandbox_detail"]["detail"] == "turned off (--sandbox none)"
