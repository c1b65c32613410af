"""Run a candidate's evaluation in child processes: timeouts, crash containment, restart for the rest."""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.evaluator.worker_entry import EXIT_PRELOAD, EXIT_RESTART, STARTUP_PHASES
from aka_tui.bench.evaluator.worker_process import WorkerLimits, WorkerProcess
from aka_tui.bench.measure import channel
from aka_tui.bench.measure.job import MeasureJob
from aka_tui.bench.measure.results import ShapeResult, StageError
from aka_tui.bench.sandbox.containment import ContainedProcess, printable, read_worker_file
from aka_tui.secrets import scrub

LIMIT_EXCEEDED = "limit_exceeded"


@dataclass
class WorkerOutcome:
    """What the worker processes of one evaluation reported, shape by shape, and how they were contained."""

    compiled: bool
    compile_error: StageError | None
    shapes: list[ShapeResult] = field(default_factory=list)
    empty_launch_ms: float | None = None
    sandbox: dict[str, str] = field(default_factory=dict)  # SandboxReport.to_json() of the (last) worker
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # per shape, for the parent's check
    seconds: dict[str, float] = field(default_factory=dict)  # workers (start, all), the parent's own steps (provenance)


def exit_description(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _log_tail(path: Path, limit: int = 1500) -> str:
    """The end of a worker's log, which its candidate may have replaced (a link out of the work dir, a FIFO)."""
    return printable(read_worker_file(path, tail=limit).decode(errors="replace")).strip()


def _exit_failure(process: ContainedProcess, code: int, log_path: Path) -> tuple[str, str]:
    """(status, message) of a worker that ended without finishing: a limit it hit, or a crash."""
    tail = scrub(_log_tail(log_path))
    limit = process.limit_reached(code)
    if limit:
        return LIMIT_EXCEEDED, limit
    description = printable(scrub(f"worker {process.exit_description(code)}"))
    return "crashed", description + (f"; log tail: {tail}" if tail else "")


def _explained_error(worker: WorkerProcess, error: StageError) -> StageError:
    """An error the worker reported, secrets scrubbed; one caused by a limit (a refused fork or thread, a file
    cut short) says so and becomes `limit_exceeded`."""
    message, trace = scrub(error.message), scrub(error.traceback_text)
    verdict = worker.proc.explain_error(message + trace)
    if verdict is None:
        return replace(error, message=message, traceback_text=trace)
    return StageError(error.stage, LIMIT_EXCEEDED, f"{verdict}; {message}"[:2000], trace)


def _explained(worker: WorkerProcess, result: ShapeResult) -> ShapeResult:
    if result.error is None or result.status in ("passed", "skipped"):
        return result
    error = _explained_error(worker, result.error)
    return replace(result, status=error.kind, error=error)


def run_job(job: MeasureJob | dict[str, Any], limits: WorkerLimits,
            on_shape: Callable[[ShapeResult], None] | None = None,
            on_shape_start: Callable[[str], None] | None = None, ahead: WorkerProcess | None = None
            ) -> WorkerOutcome:
    """Evaluate `job['shape_ids']` in sandboxed worker processes; every shape gets a result, whatever happens.
    `ahead`: a worker `start_ahead` started for this job, its first worker when it fits (else discarded).
    An interruption (Ctrl-C, SIGTERM, an exception in a callback) kills the running worker's whole tree."""
    job = job.to_json() if isinstance(job, MeasureJob) else job
    live: list[WorkerProcess] = []
    if ahead is not None and not ahead.fits(job):
        ahead.discard()
        ahead = None
    try:
        return _Evaluation(job, limits, on_shape, on_shape_start).run(live, ahead)
    finally:
        if ahead is not None and ahead not in live:
            ahead.discard()
        for worker in live:
            if not worker.closed:  # still running: interrupted
                worker.kill()
                worker.close()
                shutil.rmtree(worker.work_dir, ignore_errors=True)


@dataclass
class _WorkerState:
    """Where one worker is: still starting (compiling), which shape it runs, and how it failed, if it did."""

    startup: bool = True
    current: str | None = None
    failure: tuple[str, str] | None = None  # (status, message)
    final: bool = False  # the failure ends the job: no worker is started for the shapes left


class _Evaluation:
    """The shapes of one job across its workers: a worker that dies or hangs costs the shape it was running, and
    a fresh one takes the rest, up to `max_restarts`."""

    def __init__(self, job: dict[str, Any], limits: WorkerLimits, on_shape: Callable[[ShapeResult], None] | None,
                 on_shape_start: Callable[[str], None] | None) -> None:
        self.job, self.limits, self.on_shape, self.on_shape_start = job, limits, on_shape, on_shape_start
        self.remaining = list(job["shape_ids"])
        self.evidence: dict[str, list[dict[str, Any]]] = {}
        self.results: dict[str, ShapeResult] = {}
        self.restarts = 0
        self.compiled = True
        self.compile_error: StageError | None = None
        self.empty_launch_ms: float | None = None
        # Where a job's wall time goes outside the shapes: each worker's start (sandbox, imports, device
        # context, the candidate's import) until it reports the candidate compiled, and the workers in all.
        self.seconds = {"worker_startup": 0.0, "workers": 0.0}
        self._spawned = 0.0

    def run(self, live: list[WorkerProcess], ahead: WorkerProcess | None = None) -> WorkerOutcome:
        began = time.perf_counter()
        work_dir = ahead.work_dir if ahead is not None else Path(tempfile.mkdtemp(prefix="aka-worker-"))
        try:
            spawns = 0
            while self.remaining:
                job = {**self.job, "shape_ids": self.remaining}
                self._spawned = time.perf_counter()
                if ahead is not None:
                    worker, ahead = ahead, None
                    log_path = worker.log_path
                    live.append(worker)
                    worker.send(job)
                else:
                    log_path = work_dir / f"worker-{spawns}.log"
                    spawns += 1
                    worker = WorkerProcess(job, log_path, self.limits)
                    live.append(worker)
                state = self._follow(worker, log_path)
                if state.failure is not None and not self._after_failure(state, state.failure):
                    break
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
        ordered = [self.results[s] for s in self.job["shape_ids"] if s in self.results]
        self.seconds["workers"] = time.perf_counter() - began
        return WorkerOutcome(self.compiled, self.compile_error, ordered, self.empty_launch_ms,
                             live[-1].report.to_json() if live else {}, self.evidence,
                             seconds={k: round(v, 3) for k, v in self.seconds.items()})

    def record(self, result: ShapeResult) -> None:
        self.results[result.shape_id] = result
        if result.shape_id in self.remaining:
            self.remaining.remove(result.shape_id)
        if self.on_shape:
            self.on_shape(result)

    def _record_remaining(self, status: str, error: StageError) -> None:
        for shape_id in list(self.remaining):
            self.record(ShapeResult(shape_id, status, [], error))

    def _follow(self, worker: WorkerProcess, log_path: Path) -> _WorkerState:
        """The worker's messages until it is done, fails, or must be restarted."""
        state = _WorkerState()
        while True:
            try:
                message = worker.next_message(self.limits.startup_s if state.startup else self.limits.per_shape_s)
                message = printable(message)  # its strings come from candidate code: none reaches a terminal raw
            except channel.ChannelTampered as exc:
                worker.kill()
                worker.close()
                error = StageError("worker", "tampered", f"{exc}: something in the worker (the candidate?) wrote "
                                   "into the evaluator's message channel; the worker was killed")
                if state.startup and state.current is None:
                    self.compiled, self.compile_error = False, error
                self._record_remaining("tampered", error)
                return state
            if message is None:
                self._ended(worker, log_path, state)
                return state
            if self._handle(worker, message, state):
                return state

    def _add_startup_phases(self, phases: Any) -> None:
        """The worker's own split of its start (worker.STARTUP_PHASES), summed over the job's workers as
        `startup_<phase>`: known phases with plausible values only (the worker also runs candidate code)."""
        if not isinstance(phases, dict):
            return
        ahead = phases.get("ahead")
        if isinstance(ahead, (int, float)) and 0.0 < ahead < 1e5:  # done before the job was sent: not waited for
            self.seconds["started_ahead"] = self.seconds.get("started_ahead", 0.0) + float(ahead)
        for name in STARTUP_PHASES:
            value = phases.get(name)
            if isinstance(value, (int, float)) and 0.0 <= value < 1e5:
                key = f"startup_{name}"
                self.seconds[key] = self.seconds.get(key, 0.0) + float(value)

    def _ended(self, worker: WorkerProcess, log_path: Path, state: _WorkerState) -> None:
        """No message: the worker exited (a CUDA error's restart, or a failure) or timed out (killed)."""
        if worker.eof:
            code = worker.close()
            if code == EXIT_RESTART and state.current is None:
                self.restarts += 1  # a CUDA error was reported; the rest needs a fresh context
                return
            if code == EXIT_PRELOAD and not self.job.get("preload_dynamo"):
                # the candidate imported torch._dynamo: once, the rest (the shape it ran included) starts again
                # in a worker that imports it before the integrity snapshot
                self.job = {**self.job, "preload_dynamo": True}
                return
            if code == EXIT_PRELOAD:
                # asked again for what it already has: not the worker's request but the candidate exiting with
                # the evaluator's own status, which would cost a worker start per shape; the job ends here
                state.failure = ("crashed", f"worker exited with status {EXIT_PRELOAD} (the evaluator's request to "
                                 "re-run with torch's compiler loaded up front) after that re-run was granted: the "
                                 "candidate ends its worker with the evaluator's own status; the remaining shapes "
                                 "are not run")
                state.final = True
                return
            state.failure = _exit_failure(worker.proc, code, log_path)
            return
        worker.kill()
        worker.close()
        limit = self.limits.startup_s if state.startup else self.limits.per_shape_s
        what = "compiling/starting" if state.startup else f"shape {state.current}"
        state.failure = ("timeout", f"{what} exceeded {limit:.0f} s; worker killed")

    def _handle(self, worker: WorkerProcess, message: dict[str, Any], state: _WorkerState) -> bool:
        """One message of the worker; True when the worker is finished (done, or its candidate did not compile)."""
        event = message["event"]
        if event == "compiled":
            if not message["ok"]:
                error = _explained_error(worker, StageError(**message["error"]))
                self.compiled, self.compile_error = False, error
                self._record_remaining(error.kind, error)
                worker.close()
                return True
            state.startup = False
            self.seconds["worker_startup"] += time.perf_counter() - self._spawned
            self._add_startup_phases(message.get("startup_s"))
            if message.get("empty_launch_ms") is not None:
                self.empty_launch_ms = float(message["empty_launch_ms"])
        elif event == "shape_start":
            state.current = message["shape_id"]
            if self.on_shape_start:
                self.on_shape_start(message["shape_id"])
        elif event == "shape_result":
            result = _explained(worker, ShapeResult.from_json(message["result"]))
            self.evidence[result.shape_id] = list(message.get("evidence") or [])
            self.record(result)
            state.current = None
        elif event == "done":
            worker.close()
            return True
        return False

    def _after_failure(self, state: _WorkerState, failure: tuple[str, str]) -> bool:
        """Record what a failed worker cost; False when no new worker should start (the candidate cannot load)."""
        status, text = failure
        victim = state.current if state.current is not None else (self.remaining[0] if self.remaining else None)
        if state.startup and state.current is None:
            # Died or hung before any shape: the candidate cannot be loaded.
            error = StageError("compile", status, text)
            self.compiled, self.compile_error = False, error
            self._record_remaining(status, error)
            return False
        if victim is not None:
            self.record(ShapeResult(victim, status, [], StageError("worker", status, text)))
        if state.final:
            self._record_remaining(status, StageError("worker", status, text))
            return False
        self.restarts += 1
        if self.restarts > self.limits.max_restarts and self.remaining:
            error = StageError("worker", "skipped",
                               f"worker restarted {self.restarts} times; remaining shapes skipped")
            self._record_remaining("skipped", error)
        return True
