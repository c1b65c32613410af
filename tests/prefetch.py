"""Run a test module's independent evaluations a few at a time, ahead of the tests that assert on them.

On the CPU an evaluation is a worker process that spends ~2 s importing torch and then runs the Triton
interpreter on one core, while the test process only waits on its pipe: run one after another, half of
the 2-core CI machine sits idle. A module whose tests each wait on such work (an evaluation, an `aka`
process, a whole agent loop), none depending on another's, submits it here when its first test starts:
only what pytest selected, in collection order. Each test then takes its own result (or exception) and
asserts exactly what it asserted before. Nothing asserted on a timing runs through here, and on a GPU
every evaluation holds the per-GPU lock, so two of them never time the device at once.

Under pytest-xdist the module's selected items must all run on the worker that started their jobs: `make test`
distributes by file (`--dist loadfile`). Each worker keeps `parallel_slots()` of its own; the evaluation workers
run one OpenMP thread each (tests/conftest.py), so two test workers sharing two cores time-slice, not spin.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest

from aka_tui.safe_ast import PARSE_LOCK


def parallel_slots() -> int:
    """Evaluations at once: one per usable core, at most 4; AKA_TEST_EVAL_SLOTS=1 runs them one by one."""
    if os.environ.get("AKA_TEST_EVAL_SLOTS"):
        return max(1, int(os.environ["AKA_TEST_EVAL_SLOTS"]))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


class Prefetch:
    """Evaluations by key, started up front; `result(key)` waits for one and returns (or raises) what it did."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._futures: dict[Hashable, Future[Any]] = {}

    def submit(self, key: Hashable, work: Callable[[], Any]) -> None:
        if key not in self._futures:
            self._futures[key] = self._pool.submit(work)

    def result(self, key: Hashable) -> Any:
        return self._futures[key].result()

    def wait(self) -> None:
        """Until every submitted job has finished (their outcomes stay for `result`)."""
        futures.wait(list(self._futures.values()))


def selected(request: pytest.FixtureRequest) -> list[tuple[str, dict[str, Any]]]:
    """(test function name, parameters) of every selected item of the requesting module, in order."""
    return [(item.originalname, dict(item.callspec.params) if hasattr(item, "callspec") else {})
            for item in request.session.items
            if isinstance(item, pytest.Function) and item.module is request.module]


@contextmanager
def _one_parse_at_a_time() -> Iterator[None]:
    """The package parses under `aka_tui.safe_ast.PARSE_LOCK` (CPython 3.11's `ast.parse` is not
    thread-safe); while the jobs run, parses by other code in this process (torch, triton) take it too."""
    real_parse = ast.parse

    def parse(*args: Any, **kwargs: Any) -> Any:
        with PARSE_LOCK:
            return real_parse(*args, **kwargs)

    ast.parse = parse  # ast.literal_eval looks `parse` up here too
    try:
        yield
    finally:
        ast.parse = real_parse


@contextmanager
def prefetch(jobs: Iterable[tuple[Hashable, Callable[[], Any]]]) -> Iterator[Prefetch]:
    """Start every `(key, work)` on `parallel_slots()` threads, in order; on exit, wait for the running ones."""
    pool = ThreadPoolExecutor(parallel_slots(), thread_name_prefix="aka-test-eval")
    ahead = Prefetch(pool)
    with _one_parse_at_a_time():
        try:
            for key, work in jobs:
                ahead.submit(key, work)
            yield ahead
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
