"""One child process per swept op: a crash or a hang costs one configuration, not the sweep.

The child (`python -m aka_tui.tuning.isolation EVENTS_FILE < job.json`) sweeps one op and appends one JSON
line per event to EVENTS_FILE: `ready`, `start` (a configuration begins), `trial` (its record), `result`.
When the child dies (a signal, a fatal CUDA error) or stays silent longer than the stall limit, the parent
records the configuration in flight as `crashed` / `timeout` and starts a fresh child with every trial so far:
the child replays them instead of running them again (the search is deterministic given the measurements),
so it continues where the last one stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import ContainedProcess, read_worker_file
from aka_tui.tuning.trials import Trial, config_key

EVENTS_READ_MAX = 16 << 20  # bytes of events read a poll: a child's runaway writing cannot fill aka's memory

EXIT_CUDA_ERROR = 3  # as the evaluator's worker (bench/worker_entry.EXIT_RESTART): the context is unusable
MAX_RESTARTS = 4
STARTUP_S = 300.0


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured or replaced sys.stderr: the process's own fd 2
        return 2


class _Events:
    """Reads the complete lines appended to the child's events file since the last call. The child runs the
    kernel under sweep in its sandbox and can replace the file: it is opened without following a link, read only
    while it is a regular file and at most EVENTS_READ_MAX bytes a call (a FIFO never blocks, a link never reads
    a file outside the work dir), and a line that is not a JSON object is skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self) -> list[dict[str, Any]]:
        data = read_worker_file(self.path, head=EVENTS_READ_MAX, offset=self.offset)
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        events = []
        for line in lines:
            try:
                event = json.loads(line) if line.strip() else None
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
        return events


def sweep_cache(job: dict[str, Any]) -> Path:
    """The compiler caches the sweep's child writes: the knowledge base's kernels share one; a person's file
    (`--kernel`, e.g. a model's session kernel) gets the cache of its content, as in the evaluator, so it cannot
    plant compiled kernels under the keys a later sweep of another kernel loads."""
    source = job.get("kernel_source")
    return bwrap.cache_dir("sweep", None, source.encode() if source is not None else None)


def _spawn(job: dict[str, Any], work_dir: Path, events_path: Path, limits: WorkerLimits) -> ContainedProcess:
    """The sweep's child in the evaluator's sandbox: the problem and the knowledge base read-only, the GPU lock
    directory writable (the child takes the per-GPU lock itself), everything else as for a worker."""
    from aka_tui.paths import aka_home

    home = aka_home()
    (home / "locks").mkdir(parents=True, exist_ok=True)
    read_only = [Path(job["problem_dir"]), Path(job["kb"])]
    if (home / "hardware").is_dir():
        read_only.append(home / "hardware")  # measured profiles
    cache = sweep_cache(job)
    env = {"AKA_HOME": str(home), "TRITON_CACHE_DIR": str(cache / "triton"),
           "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor")}
    gpu = str(job["device"]).startswith("cuda")
    if not gpu:
        env["TRITON_INTERPRET"] = "1"
    view = bwrap.View(work_dir, tuple(read_only), (home / "locks", cache), gpu, env)
    # The child's own output (kernel prints, warnings) goes to our stderr, never into the table.
    process, _ = bwrap.spawn([sys.executable, "-m", "aka_tui.tuning.isolation", str(events_path)], view,
                               limits.resources(len(job["shape_ids"]) * 50), limits.sandbox,
                               stdin=subprocess.PIPE, stdout=_stderr_fd(), stderr=_stderr_fd())
    return process


def run_isolated(job: dict[str, Any], stall_s: float, on_event: Callable[[dict[str, Any]], None],
                 limits: WorkerLimits | None = None) -> dict[str, Any]:
    """Sweep `job['op']` in sandboxed child processes; returns the op's record (a failed one when it cannot
    finish). An interruption kills the running child's whole process tree."""
    limits = limits or WorkerLimits(per_shape_s=stall_s)
    children: list[ContainedProcess] = []
    try:
        return _run_children(job, stall_s, on_event, limits, children.append)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.close()


def _run_children(job: dict[str, Any], stall_s: float, on_event: Callable[[dict[str, Any]], None],
                  limits: WorkerLimits, started: Callable[[ContainedProcess], Any]) -> dict[str, Any]:
    """Children one after the other, each given every trial so far, until one reports the op's result."""
    trials: dict[tuple[str, str], dict[str, Any]] = {}
    restarts = 0
    last_error = ""
    with tempfile.TemporaryDirectory(prefix="aka-sweep-", ignore_cleanup_errors=True) as tmp:
        while restarts <= MAX_RESTARTS:
            path = Path(tmp) / f"events-{restarts}.jsonl"
            proc = _spawn(job, Path(tmp), path, limits)
            started(proc)
            _send_job(proc, {**job, "known": list(trials.values())})
            child = _Child(proc, _Events(path), trials, on_event)
            child.follow(job["op"], stall_s)
            proc.close()  # whatever the child left running dies with it
            if child.result is not None:
                return child.result
            if child.inflight is not None:
                failed = child.failed_trial(stall_s)
                trials[(config_key(failed["config"]), failed["shape_id"])] = failed
                on_event({"event": "trial", "trial": failed, "op": job["op"]})
                last_error = failed["error"]
            elif child.code != EXIT_CUDA_ERROR:
                last_error = (f"child {child.exit_description()}" + (" (stalled)" if child.stalled else "") +
                              " outside any configuration (see its output above)")
                if not child.ready:
                    break  # it cannot even load the op: a restart would do the same
            restarts += 1
    from aka_tui.tuning.sweep import failed_op_record

    return failed_op_record(job["op"], None, f"the sweep could not finish: {last_error}", list(trials.values()))


def _send_job(proc: ContainedProcess, job: dict[str, Any]) -> None:
    stdin = proc.proc.stdin
    assert stdin is not None
    try:
        stdin.write(json.dumps(job).encode())
        stdin.close()
    except BrokenPipeError:
        pass


class _Child:
    """One child as the parent follows it: the trials it reports, the configuration in flight, how it ended."""

    def __init__(self, proc: ContainedProcess, events: _Events, trials: dict[tuple[str, str], dict[str, Any]],
                 on_event: Callable[[dict[str, Any]], None]) -> None:
        self.proc, self.events, self.trials, self.on_event = proc, events, trials, on_event
        self.code: int | None = None
        self.ready = False
        self.stalled = False
        self.inflight: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.lock_wait: float | None = None  # since when the child waits for the GPU lock (no stall limit then)
        self.last = time.monotonic()  # when the child last wrote an event

    def follow(self, op: str, stall_s: float) -> None:
        """Read its events until it exits, or kill it once it stays silent past the stall limit."""
        told = False
        while True:
            self.code = self.proc.poll()
            for event in self.events.read():
                self.last = time.monotonic()
                self._handle(event)
            if self.code is not None:
                return
            if self.lock_wait is not None:
                if not told and time.monotonic() - self.lock_wait > 2.0:
                    print(f"{op}: waiting for the GPU lock (another aka process is timing on this GPU)",
                          file=sys.stderr, flush=True)
                    told = True
                self.last = time.monotonic()
            limit = stall_s if self.ready else max(stall_s, STARTUP_S)
            if time.monotonic() - self.last > limit:
                self._kill_stalled()
                return
            time.sleep(0.1)

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "gpu_lock":
            self.lock_wait = self.last if event.get("state") == "waiting" else None
        elif kind == "ready":
            self.ready = True
            self.on_event(event)
        elif kind == "start":
            self.inflight = event
        elif kind == "trial":
            self._keep(event["trial"])
            self.on_event(event)
        elif kind == "result":
            self.result = event["result"]

    def _keep(self, trial: dict[str, Any]) -> None:
        self.trials[(config_key(trial["config"]), trial["shape_id"])] = trial
        self.inflight = None

    def _kill_stalled(self) -> None:
        self.proc.kill()
        self.code = self.proc.wait()
        self.stalled = True
        for event in self.events.read():  # anything written before the kill
            if event.get("event") == "trial":
                self._keep(event["trial"])

    def exit_description(self) -> str:
        assert self.code is not None  # `follow` returns once the child has exited
        return self.proc.exit_description(self.code)

    def failed_trial(self, stall_s: float) -> dict[str, Any]:
        """The configuration in flight when the child died or stalled, recorded as `crashed` or `timeout`."""
        inflight = self.inflight
        assert inflight is not None
        status = "timeout" if self.stalled else "crashed"
        what = (f"no progress for {stall_s:.0f} s; child killed" if self.stalled
                else f"child {self.exit_description()}")
        return Trial(int(inflight["index"]), inflight["shape_id"], inflight["config"], inflight["changed"],
                     inflight["phase"], status, f"{what} while running this configuration").to_json()


def child_main(events_path: str) -> int:
    """Entry of the child: sweep the job's op, writing events; exit EXIT_CUDA_ERROR after a fatal CUDA error."""
    job = json.loads(sys.stdin.read())
    if not str(job["device"]).startswith("cuda"):
        os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module is imported
    handle = open(events_path, "a", buffering=1)

    def emit(event: dict[str, Any]) -> None:
        handle.write(json.dumps(event, default=str) + "\n")
        handle.flush()

    from aka_tui.tuning.runner import sweep_job

    result = sweep_job(job, emit)
    cuda_lost = bool(result.get("cuda_context_lost"))
    if not cuda_lost:  # after a fatal CUDA error a fresh child replays the trials and goes on
        emit({"event": "result", "result": result})
    handle.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_CUDA_ERROR if cuda_lost else 0)


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1]))
