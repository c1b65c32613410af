"""Run a candidate's evaluation in child processes: timeouts, crash containment, restart for the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.measure import channel
from aka_tui.bench.measure.job import MeasureJob
from aka_tui.bench.results import ShapeResult, StageError
from aka_tui.bench.worker_entry import EXIT_RESTART


@dataclass
class WorkerLimits:
    """Wall-clock limits for one worker (seconds)."""

    startup_s: float = 180.0  # importing torch, loading the problem and compiling the candidate
    per_shape_s: float = 300.0
    max_restarts: int = 8


@dataclass
class JobOutcome:
    compiled: bool
    compile_error: StageError | None
    shapes: list[ShapeResult] = field(default_factory=list)
    empty_launch_ms: float | None = None
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # per shape, for the parent's check
    seconds: dict[str, float] = field(default_factory=dict)  # what the parent's own steps took (provenance)


def exit_description(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _log_tail(path: Path, limit: int = 1500) -> str:
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    return data.decode(errors="replace").strip()


class _Worker:
    """One child process and the authenticated message channel from it (`measure/channel.py`)."""

    def __init__(self, job: dict[str, Any], log_path: Path) -> None:
        read_fd, write_fd = os.pipe()
        key = channel.new_key()
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        if job.get("visible_devices") is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(job["visible_devices"])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aka_tui.bench.worker_entry", str(log_path)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(write_fd,), env=env, start_new_session=True)
        os.close(write_fd)
        assert self.proc.stdin is not None
        # The channel's fd and key travel on stdin, never in argv or the environment.
        self.proc.stdin.write(json.dumps({**job, "channel": {"fd": write_fd, "key": key.hex()}}).encode())
        self.proc.stdin.close()
        self.channel = channel.Reader(read_fd, key)

    @property
    def eof(self) -> bool:
        return self.channel.eof

    def next_message(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message, or None on timeout or when the channel closed (check `eof`); raises
        `channel.ChannelTampered` when a line fails authentication."""
        return self.channel.next_message(timeout_s)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> int:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        self.channel.close()
        return code


def run_job(job: MeasureJob | dict[str, Any], limits: WorkerLimits,
            on_shape: Callable[[ShapeResult], None] | None = None,
            on_shape_start: Callable[[str], None] | None = None) -> JobOutcome:
    """Evaluate the job's shapes in worker processes; every shape gets a result, whatever happens."""
    job = job.to_json() if isinstance(job, MeasureJob) else job
    remaining = list(job["shape_ids"])
    evidence: dict[str, list[dict[str, Any]]] = {}
    results: dict[str, ShapeResult] = {}
    restarts = 0
    compiled, compile_error = True, None
    empty_launch_ms: float | None = None

    def record(result: ShapeResult) -> None:
        results[result.shape_id] = result
        if result.shape_id in remaining:
            remaining.remove(result.shape_id)
        if on_shape:
            on_shape(result)

    with tempfile.TemporaryDirectory(prefix="aka-worker-") as tmp:
        while remaining:
            log_path = Path(tmp) / f"worker-{restarts}.log"
            worker = _Worker({**job, "shape_ids": remaining}, log_path)
            current: str | None = None
            startup = True
            failure: tuple[str, str] | None = None
            while True:
                try:
                    message = worker.next_message(limits.startup_s if startup else limits.per_shape_s)
                except channel.ChannelTampered as exc:
                    worker.kill()
                    worker.close()
                    error = StageError("worker", "tampered", f"{exc}: something in the worker (the candidate?) wrote "
                                       "into the evaluator's message channel; the worker was killed")
                    if startup and current is None:
                        compiled, compile_error = False, error
                    for shape_id in list(remaining):
                        record(ShapeResult(shape_id, "tampered", [], error))
                    break
                if message is None:
                    if worker.eof:
                        code = worker.close()
                        if code == EXIT_RESTART and current is None:
                            restarts += 1  # a CUDA error was reported; the rest needs a fresh context
                            break
                        tail = _log_tail(log_path)
                        failure = ("crashed", f"worker {exit_description(code)}" + (f"; log tail: {tail}" if tail else ""))
                    else:
                        worker.kill()
                        worker.close()
                        limit = limits.startup_s if startup else limits.per_shape_s
                        what = "compiling/starting" if startup else f"shape {current}"
                        failure = ("timeout", f"{what} exceeded {limit:.0f} s; worker killed")
                    break
                event = message["event"]
                if event == "compiled":
                    if not message["ok"]:
                        error = StageError(**message["error"])
                        compiled, compile_error = False, error
                        for shape_id in list(remaining):
                            record(ShapeResult(shape_id, error.kind, [], error))
                        worker.close()
                        break
                    startup = False
                    if message.get("empty_launch_ms") is not None:
                        empty_launch_ms = float(message["empty_launch_ms"])
                elif event == "shape_start":
                    current = message["shape_id"]
                    if on_shape_start:
                        on_shape_start(current)
                elif event == "shape_result":
                    result = ShapeResult.from_json(message["result"])
                    evidence[result.shape_id] = list(message.get("evidence") or [])
                    record(result)
                    current = None
                elif event == "done":
                    worker.close()
                    break
            if failure is None:
                continue
            status, text = failure
            victim = current if current is not None else (remaining[0] if remaining else None)
            if startup and current is None:
                # Died or hung before any shape: the candidate cannot be loaded.
                error = StageError("compile", status, text)
                compiled, compile_error = False, error
                for shape_id in list(remaining):
                    record(ShapeResult(shape_id, status, [], error))
                break
            if victim is not None:
                record(ShapeResult(victim, status, [], StageError("worker", status, text)))
            restarts += 1
            if restarts > limits.max_restarts and remaining:
                error = StageError("worker", "skipped", f"worker restarted {restarts} times; remaining shapes skipped")
                for shape_id in list(remaining):
                    record(ShapeResult(shape_id, "skipped", [], error))
    ordered = [results[s] for s in job["shape_ids"] if s in results]
    return JobOutcome(compiled, compile_error, ordered, empty_launch_ms, evidence)
