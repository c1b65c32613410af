"""Entry point of the evaluation worker process (stdlib imports only until the environment is set).

Usage (by `isolation.py`): python -m aka_tui.bench.evaluator.worker_entry LOG_PATH DEVICE_KIND PRELOAD < job.json
(DEVICE_KIND `cuda` or `cpu`; PRELOAD `dynamo` or `-`: import torch's compiler up front)

The worker imports the harness first and reads its job afterwards, so a worker started ahead of its evaluation
(`worker_process.start_ahead`) waits with its imports done. The job on stdin carries the message channel (`channel`:
the pipe's fd and the key that authenticates every message, see `measure/channel.py`); neither appears in argv or
the environment.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

EXIT_RESTART = 3  # the worker reported a fatal CUDA error: the parent starts a fresh worker for the rest
EXIT_PRELOAD = 4  # the candidate imported torch._dynamo: the parent re-runs the rest with it imported up front
# A worker's start, in order (seconds of each sent with `compiled`): the sandbox and the interpreter until this
# module runs, the harness's imports, the problem's modules, the device context (with the empty-launch
# measurement on a GPU), the harness's warm-up, the candidate's import and compile. Only the part after the
# evaluation sent the job counts: what a worker started ahead did before is reported as `ahead`.
STARTUP_PHASES = ("process", "imports", "problem", "device", "harness", "candidate")


def visible_split(spawned: float, entered: float, imported: float, released: float) -> dict[str, float]:
    """The sandbox-and-interpreter and import phases as the evaluation saw them, and what was done `ahead` of
    it: a worker started ahead (`released` after `spawned`) hides what it finished before its job was sent."""
    released = max(released, spawned)
    return {"process": round(max(0.0, entered - released), 3),
            "imports": round(max(0.0, imported - max(entered, released)), 3),
            "ahead": round(max(0.0, min(imported, released) - spawned), 3)}


def main() -> None:
    log_path, device_kind, preload = sys.argv[1:4]
    entered = time.time()
    if device_kind != "cuda":
        os.environ["TRITON_INTERPRET"] = "1"  # before any @triton.jit decorates a kernel
    # The candidate's prints go to the log, never into the message channel.
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)

    from aka_tui.bench.evaluator.worker import run
    from aka_tui.bench.measure.channel import sender

    if preload == "dynamo":
        importlib.import_module("torch._dynamo")  # 1.5-2 s; before the integrity snapshot either way
    imported = time.time()
    job = json.loads(sys.stdin.read())  # a worker started ahead waits here until its evaluation sends the job
    channel = job.pop("channel")
    spawned, released = job.pop("spawned_unix", None), job.pop("released_unix", None)
    emit = sender(int(channel["fd"]), bytes.fromhex(channel["key"]))
    del channel
    if not isinstance(spawned, (int, float)):
        spawned = entered
    startup = visible_split(spawned, entered, imported, released if isinstance(released, (int, float)) else spawned)
    code = run(job, emit, startup)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
