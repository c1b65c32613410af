"""Entry point of the evaluation worker process (stdlib imports only until the environment is set).

Usage (by `isolation.py`): python -m aka_tui.bench.evaluator.worker_entry LOG_PATH < job.json

The job on stdin carries the message channel (`channel`: the pipe's fd and the key that authenticates every
message, see `measure/channel.py`); neither appears in argv or the environment.
"""

from __future__ import annotations

import json
import os
import sys
import time

EXIT_RESTART = 3  # the worker reported a fatal CUDA error: the parent starts a fresh worker for the rest
EXIT_PRELOAD = 4  # the candidate imported torch._dynamo: the parent re-runs the rest with it imported up front
# A worker's start, in order (seconds of each sent with `compiled`): the sandbox and the interpreter until this
# module runs, the harness's imports, the problem's modules, the device context (with the empty-launch
# measurement on a GPU), the harness's warm-up, the candidate's import and compile.
STARTUP_PHASES = ("process", "imports", "problem", "device", "harness", "candidate")


def main() -> None:
    log_path = sys.argv[1]
    job = json.loads(sys.stdin.read())
    entered = time.time()
    channel = job.pop("channel")
    spawned = job.pop("spawned_unix", None)
    if not str(job["device"]).startswith("cuda"):
        os.environ["TRITON_INTERPRET"] = "1"  # before any @triton.jit decorates a kernel
    # The candidate's prints go to the log, never into the message channel.
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)

    from aka_tui.bench.measure.channel import sender

    emit = sender(int(channel["fd"]), bytes.fromhex(channel["key"]))
    del channel
    from aka_tui.bench.evaluator.worker import run

    # where the worker's start goes (reported with `compiled`): the sandbox and interpreter until this module
    # ran, then the harness's imports (torch, triton, the engine)
    startup = {"process": entered - spawned if isinstance(spawned, (int, float)) else 0.0,
               "imports": time.time() - entered}
    code = run(job, emit, startup)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
