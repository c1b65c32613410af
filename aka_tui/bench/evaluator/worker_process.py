"""One evaluation worker process: its sandbox view and limits, the job sent on its stdin (at once, or later for a
worker started ahead), and the authenticated channel its messages come back on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.bench.measure import channel
from aka_tui.bench.measure.job import MeasureJob
from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import GiB, ResourceLimits


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
            job.get("visible_devices"), _preloads_compiler(job))  # last: the worker's PRELOAD argument


def _preloads_compiler(job: dict[str, Any]) -> bool:
    """Whether the worker imports torch's compiler before reading its job (worker.dynamo_up_front)."""
    from aka_tui.bench.evaluator.worker import dynamo_up_front

    return dynamo_up_front(MeasureJob.from_json(job))


def start_ahead(job: MeasureJob | dict[str, Any], limits: WorkerLimits) -> WorkerProcess | None:
    """A worker for `job` (or any job with the same view and no more shapes), started now and left waiting for
    its job with its imports done; `run_job(..., ahead=worker)` sends it the job. None where it cannot start:
    starting ahead only saves time, it never fails an evaluation."""
    job = job.to_json() if isinstance(job, MeasureJob) else job
    work_dir = Path(tempfile.mkdtemp(prefix="aka-worker-"))
    try:
        return WorkerProcess(job, work_dir / "worker-ahead.log", limits, send=False)
    except Exception:
        shutil.rmtree(work_dir, ignore_errors=True)
        return None


class WorkerProcess:
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
        gpu, preload = str(job["device"]).startswith("cuda"), self.view_key[-1]
        try:
            self.proc, self.report = bwrap.spawn(
                [sys.executable, "-m", "aka_tui.bench.evaluator.worker_entry", str(log_path),
                 "cuda" if gpu else "cpu", "dynamo" if preload else "-"],
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


