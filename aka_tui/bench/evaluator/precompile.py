"""Warm torch.compile's on-disk caches in parallel before a timed `--baseline compile` run, or before a
candidates run that times torch.compile (default mode) beside each candidate (`--compare-compile`).

Compilation, not timing, dominates the compile baseline (~8.7 s per shape with a cold inductor cache on
an H200 machine, 2026-11-29). Compiling every shape once in a process pool fills inductor's FX-graph and
Triton caches; the sequential, timed workers then load instead of compiling. Nothing is timed while the
pool runs, so timing integrity is untouched.

The max-autotune baseline (`--baseline compile-max-autotune`) is not warmed here: it benchmarks GEMM templates
on the GPU while compiling and inductor caches the winners, so a pool compiling side by side would choose them
under its own load (`executors/suite.py`, PRECOMPILED_BASELINES).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any


def _compile_one(problem_dir: str, shape_id: str, device: str, cache_kind: str) -> tuple[str, str, str]:
    """Compile the reference for one shape (in a pool process) into the shared caches of the workers of
    `cache_kind` ("compile": the compile baseline's; "baselines": those that time baselines beside a
    candidate); returns (problem, shape, error or '')."""
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from aka_tui.bench.sandbox.bwrap import cache_dir

    cache = cache_dir(cache_kind, None)  # the timed workers of that kind read these caches (evaluator/isolation.py)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(cache / "triton")
    import torch

    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file
    from aka_tui.bench.problem.settled_order import import_reference

    problem = load_problem(problem_dir)
    try:
        shape = problem.shapes[shape_id]
        # what the compile baselines compile: the problem's compile form where it has one (measure/session.py)
        compiled = import_reference(problem.compile_form_path or problem.reference_path, "ref")
        inputs_module = import_file(problem.input_path, "inp")
        inputs = make_inputs(problem, inputs_module, shape, device, 0)
        model = compiled.Model(**shape.init_kwargs).to(device).eval()
        with torch.no_grad():
            torch.compile(model, dynamic=False)(**inputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return problem.name, shape_id, ""
    except Exception as exc:  # the timed run reports the failure as the baseline's verdict
        return problem.name, shape_id, f"{type(exc).__name__}: {str(exc)[:200]}"


def _serve(conn: Connection, device: str, cache_kind: str) -> None:
    """A pool process: compile the jobs the parent sends until it sends None. Dies with the parent (a `timeout`
    or Ctrl-C that ends the bench must not leave compilers holding the GPU's memory)."""
    with contextlib.suppress(Exception):  # Linux: SIGKILL when the parent exits
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(_compile_one(job[0], job[1], device, cache_kind))


class _Slot:
    """One pool process and the job it is compiling."""

    def __init__(self, context: Any, device: str, cache_kind: str) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, device, cache_kind), daemon=True)
        self.process.start()
        child.close()
        self.job: tuple[str, str] | None = None
        self.since = 0.0

    def give(self, job: tuple[str, str]) -> None:
        self.job, self.since = job, time.monotonic()
        self.conn.send(job)

    def stop(self, kill: bool = False) -> None:
        with contextlib.suppress(OSError, ValueError):
            if kill:
                self.process.kill()
            else:
                self.conn.send(None)
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()


def precompile(jobs: list[tuple[str, str]], device: str, workers: int,
               progress: Callable[[str, str, str], None] | None = None,
               job_timeout_s: float | None = None, cache_kind: str = "compile") -> list[tuple[str, str, str]]:
    """Compile (problem_dir, shape_id) pairs with `workers` processes; returns one outcome per pair. A job
    still compiling after `job_timeout_s` is stopped (its process killed and replaced): its shape is compiled
    by the timed run instead, under that run's own per-shape limit (a reference whose Python loops break the
    graph at every step can take dynamo many minutes). `cache_kind`: whose caches to warm (see _compile_one)."""
    context = multiprocessing.get_context("spawn")
    pending = list(reversed(jobs))
    slots = [_Slot(context, device, cache_kind) for _ in range(max(1, min(workers, len(jobs))))]
    outcomes: list[tuple[str, str, str]] = []

    def done(outcome: tuple[str, str, str]) -> None:
        outcomes.append(outcome)
        if progress:
            progress(*outcome)

    try:
        while pending or any(slot.job for slot in slots):
            for slot in slots:
                if slot.job is None and pending:
                    slot.give(pending.pop())
            busy = [slot for slot in slots if slot.job is not None]
            ready = set(wait([slot.conn for slot in busy], timeout=1.0))
            for index, slot in enumerate(slots):
                if slot.job is None:
                    continue
                if slot.conn in ready:
                    try:
                        outcome = slot.conn.recv()
                    except (EOFError, OSError):  # the process died (e.g. a crash in the compiler)
                        outcome = (Path(slot.job[0]).name, slot.job[1], "the compiling process died")
                        slot.stop(kill=True)
                        slots[index] = _Slot(context, device, cache_kind)
                    else:
                        slot.job = None
                    done(outcome)
                elif job_timeout_s is not None and time.monotonic() - slot.since > job_timeout_s:
                    job = slot.job
                    slot.stop(kill=True)
                    slots[index] = _Slot(context, device, cache_kind)
                    done((Path(job[0]).name, job[1], f"not compiled within {job_timeout_s:.0f} s (left to the "
                                                     "timed run)"))
    finally:
        for slot in slots:
            slot.stop(kill=slot.job is not None)
    return outcomes
