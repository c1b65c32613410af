"""Run a candidate's evaluation in child processes: timeouts, crash containment, restart for the rest."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.evaluator.worker_entry import EXIT_PRELOAD, EXIT_RESTART, STARTUP_PHASES
from aka_tui.bench.measure import channel
from aka_tui.bench.measure.job import MeasureJob
from aka_tui.bench.measure.results import ShapeResult, StageError
from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import ContainedProcess, GiB, ResourceLimits, printable, read_worker_file
from aka_tui.secrets import scrub

LIMIT_EXCEEDED = "limit_exceeded"


@dataclass
class WorkerLimits:
    """Wall-clock limits of one worker (seconds), its resource limits and its sandbox (docs/evaluator.md)."""

    startup_s: float = 180.0  # importing torch, loading the problem and compiling the candidate
    per_shape_s: float = 300.0
    max_restarts: int = 8
    memory_bytes: int = field(default_factory=bwrap.default_memory_bytes)  # resident, whole process tree
    cpu_s: float | None = None  # CPU time per process; None: the wall-clock budget of the job
    tasks: int = 4096  # processes and threads
    file_bytes: int = 1 * GiB  # any one file
    disk_bytes: int = 4 * GiB  # the work directory and the candidate's compiler cache together
    sandbox: str | None = None  # auto | bwrap | none; None: $AKA_SANDBOX, else auto
    cgroups: bool = True  # False: memory and tasks bounded by the watchdog only

    def resources(self, shapes: int) -> ResourceLimits:
        cpu = self.cpu_s if self.cpu_s is not None else self.startup_s + self.per_shape_s * max(shapes, 1)
        return ResourceLimits(self.memory_bytes, cpu, self.tasks, self.file_bytes, self.disk_bytes, self.cgroups)


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


GPU_ALLOCATOR = "expandable_segments:True"


def _view(job: dict[str, Any], work_dir: Path) -> bwrap.View:
    """What the worker sees: the problem and the candidate read-only, its compiler cache and work dir writable."""
    read_only = [Path(job["problem_dir"])]
    candidate = job["candidate"].get("path")
    if candidate:
        read_only.append(Path(candidate))
    cache = bwrap.cache_dir(job["candidate"].get("kind", "file"), candidate)
    env = {"TRITON_CACHE_DIR": str(cache / "triton"), "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor")}
    if job.get("visible_devices") is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(job["visible_devices"])
    gpu = str(job["device"]).startswith("cuda")
    if not gpu:
        env["TRITON_INTERPRET"] = "1"
    elif "PYTORCH_CUDA_ALLOC_CONF" not in os.environ:
        # a reference that needs most of the GPU (a published MoE dequantising every expert to fp32 asked for
        # 28 GiB with 12 GiB free and 49 GiB cached in fragments, H200, 2026-12-02) is not failed by the caching
        # allocator's fragmentation; a person's own setting wins
        env["PYTORCH_CUDA_ALLOC_CONF"] = GPU_ALLOCATOR
    return bwrap.View(work_dir, tuple(read_only), (cache,), gpu, env)


def _view_key(job: dict[str, Any]) -> tuple[Any, ...]:
    """What a worker's sandbox is made from (`_view`): a worker started ahead runs only a job with the same."""
    candidate = job["candidate"]
    return (job["problem_dir"], candidate.get("kind"), candidate.get("path"), str(job["device"]),
            job.get("visible_devices"), _preloads_compiler(job))


def _preloads_compiler(job: dict[str, Any]) -> bool:
    """Whether the worker imports torch's compiler before reading its job (worker.dynamo_up_front)."""
    from aka_tui.bench.evaluator.worker import dynamo_up_front
    from aka_tui.bench.measure.job import MeasureJob

    return dynamo_up_front(MeasureJob.from_json(job))


def start_ahead(job: MeasureJob | dict[str, Any], limits: WorkerLimits) -> StartedWorker | None:
    """A worker for `job` (or any job with the same view and no more shapes), started now and left waiting for
    its job with its imports done; `run_job(..., ahead=worker)` sends it the job. None where it cannot start:
    starting ahead only saves time, it never fails an evaluation."""
    job = job.to_json() if isinstance(job, MeasureJob) else job
    work_dir = Path(tempfile.mkdtemp(prefix="aka-worker-"))
    try:
        return _Worker(job, work_dir / "worker-ahead.log", limits, send=False)
    except Exception:
        shutil.rmtree(work_dir, ignore_errors=True)
        return None


class _Worker:
    """One sandboxed child process and the authenticated message channel from it (`measure/channel.py`).

    The job is sent on stdin after the spawn: at once, or later by `send` for a worker started ahead (it does its
    imports meanwhile, and touches no GPU until the job arrives)."""

    def __init__(self, job: dict[str, Any], log_path: Path, limits: WorkerLimits | None = None,
                 send: bool = True) -> None:
        limits = limits or WorkerLimits()
        self.log_path = log_path
        self.view_key = _view_key(job)
        self.shapes = len(job["shape_ids"])
        self.started_ahead = not send
        read_fd, write_fd = os.pipe()
        self._key = channel.new_key()
        self._write_fd = write_fd
        self.spawned = time.time()  # the worker reports its start's phases from here (`startup_s` in `compiled`)
        gpu = str(job["device"]).startswith("cuda")
        try:
            self.proc, self.report = bwrap.spawn(
                [sys.executable, "-m", "aka_tui.bench.evaluator.worker_entry", str(log_path),
                 "cuda" if gpu else "cpu", "dynamo" if _preloads_compiler(job) else "-"],
                _view(job, log_path.parent), limits.resources(self.shapes), limits.sandbox,
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_fd,))
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self.channel = channel.Reader(read_fd, self._key)
        self.closed = False
        if send:
            self.send(job)

    def fits(self, job: dict[str, Any]) -> bool:
        """Whether this worker, started ahead, can run `job`: the same view (problem, candidate, device) and
        limits sized for at least its shapes, and still alive."""
        return (self.started_ahead and not self.closed and self.proc.poll() is None
                and _view_key(job) == self.view_key and len(job["shape_ids"]) <= self.shapes)

    def send(self, job: dict[str, Any]) -> None:
        stdin = self.proc.proc.stdin
        assert stdin is not None
        try:
            # The channel's fd and key travel on stdin, never in argv or the environment.
            stdin.write(json.dumps({**job, "channel": {"fd": self._write_fd, "key": self._key.hex()},
                                    "spawned_unix": self.spawned,
                                    "released_unix": time.time() if self.started_ahead else self.spawned}).encode())
            stdin.close()
        except BrokenPipeError:
            pass  # it died at once: the channel's EOF and the exit status say why

    def discard(self) -> None:
        """Kill a worker started ahead that no evaluation took, and remove its work dir (after an evaluation
        took it: nothing left to do)."""
        if not self.closed:
            self.kill()
            self.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)

    @property
    def eof(self) -> bool:
        return self.channel.eof

    def next_message(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message, or None on timeout or when the channel closed (check `eof`); raises
        `channel.ChannelTampered` when a line fails authentication."""
        return self.channel.next_message(timeout_s)

    @property
    def work_dir(self) -> Path:
        return self.log_path.parent

    def kill(self) -> None:
        """SIGKILL the worker's whole process tree."""
        self.proc.kill()

    def close(self) -> int:
        if self.closed:
            return self.proc.proc.returncode
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.proc.returncode
        self.proc.close()  # whatever it left running dies with it
        self.channel.close()
        self.closed = True
        return code


StartedWorker = _Worker  # what `start_ahead` returns and `run_job(ahead=...)` takes


def _exit_failure(process: ContainedProcess, code: int, log_path: Path) -> tuple[str, str]:
    """(status, message) of a worker that ended without finishing: a limit it hit, or a crash."""
    tail = scrub(_log_tail(log_path))
    limit = process.limit_reached(code)
    if limit:
        return LIMIT_EXCEEDED, limit
    description = printable(scrub(f"worker {process.exit_description(code)}"))
    return "crashed", description + (f"; log tail: {tail}" if tail else "")


def _explained_error(worker: _Worker, error: StageError) -> StageError:
    """An error the worker reported, secrets scrubbed; one caused by a limit (a refused fork or thread, a file
    cut short) says so and becomes `limit_exceeded`."""
    message, trace = scrub(error.message), scrub(error.traceback_text)
    verdict = worker.proc.explain_error(message + trace)
    if verdict is None:
        return replace(error, message=message, traceback_text=trace)
    return StageError(error.stage, LIMIT_EXCEEDED, f"{verdict}; {message}"[:2000], trace)


def _explained(worker: _Worker, result: ShapeResult) -> ShapeResult:
    if result.error is None or result.status in ("passed", "skipped"):
        return result
    error = _explained_error(worker, result.error)
    return replace(result, status=error.kind, error=error)


def run_job(job: MeasureJob | dict[str, Any], limits: WorkerLimits,
            on_shape: Callable[[ShapeResult], None] | None = None,
            on_shape_start: Callable[[str], None] | None = None, ahead: StartedWorker | None = None
            ) -> WorkerOutcome:
    """Evaluate `job['shape_ids']` in sandboxed worker processes; every shape gets a result, whatever happens.
    `ahead`: a worker `start_ahead` started for this job, its first worker when it fits (else discarded).
    An interruption (Ctrl-C, SIGTERM, an exception in a callback) kills the running worker's whole tree."""
    job = job.to_json() if isinstance(job, MeasureJob) else job
    live: list[_Worker] = []
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

    def run(self, live: list[_Worker], ahead: _Worker | None = None) -> WorkerOutcome:
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
                    worker = _Worker(job, log_path, self.limits)
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

    def _follow(self, worker: _Worker, log_path: Path) -> _WorkerState:
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

    def _ended(self, worker: _Worker, log_path: Path, state: _WorkerState) -> None:
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

    def _handle(self, worker: _Worker, message: dict[str, Any], state: _WorkerState) -> bool:
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
