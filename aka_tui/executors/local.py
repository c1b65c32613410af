"""The local executor: one slot per visible GPU (or N CPU workers), each running one evaluation at a time."""

from __future__ import annotations

import os
import queue
import socket
import threading
from dataclasses import dataclass, replace
from typing import Any, Iterator

from aka_tui.bench.evaluator.evaluate import EvalOptions, evaluate_candidate, resolve_device, start_worker_ahead
from aka_tui.bench.evaluator.worker_process import WorkerProcess
from aka_tui.errors import EvaluationError
from aka_tui.executors.base import EvalJob, JobOutcome, ShapeCallback


def visible_gpus() -> list[str]:
    """Physical ids of the GPUs this process may use, in torch's order (CUDA_VISIBLE_DEVICES honoured)."""
    import torch

    if not torch.cuda.is_available():
        return []
    count = torch.cuda.device_count()
    listed = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return listed[:count] if listed else [str(i) for i in range(count)]


@dataclass(frozen=True)
class Slot:
    """One place an evaluation runs: a GPU (parent-visible index + physical id) or a CPU worker."""

    index: int
    device: str  # "cuda:<parent index>" or "cpu"
    physical: str | None  # the id put into the worker's CUDA_VISIBLE_DEVICES
    name: str
    node: str

    def describe(self) -> dict[str, Any]:
        return {"slot": self.index, "device": self.device, "gpu": self.physical, "name": self.name,
                "node": self.node}


def local_slots(device: str, gpus: int | None = None, cpu_workers: int = 1) -> list[Slot]:
    """One slot per visible GPU (or the first `gpus` of them); `cpu_workers` slots on the CPU."""
    node = socket.gethostname()
    device = resolve_device(device)
    if device == "cpu":
        return [Slot(i, "cpu", None, "cpu", node) for i in range(max(1, cpu_workers))]
    import torch

    physical = visible_gpus()
    if ":" in device:  # an explicit cuda:N pins a single slot
        index = int(device.split(":", 1)[1])
        if index >= len(physical):
            raise EvaluationError(f"{device} asked for, but only {len(physical)} GPU(s) are visible")
        return [Slot(0, device, physical[index], torch.cuda.get_device_name(index), node)]
    if gpus is not None:
        if gpus < 1 or gpus > len(physical):
            raise EvaluationError(f"--gpus {gpus} asked for, but {len(physical)} GPU(s) are visible")
        physical = physical[:gpus]
    return [Slot(i, f"cuda:{i}", pid, torch.cuda.get_device_name(i), node) for i, pid in enumerate(physical)]


def options_for_slot(options: EvalOptions, slot: Slot) -> EvalOptions:
    """The job's options pinned to a slot: the worker sees only that GPU; S uses that GPU's profile."""
    if slot.device == "cpu":
        return replace(options, device="cpu")
    return replace(options, device=slot.device, visible_devices=slot.physical)


class LocalExecutor:
    """Threads, one per slot, each running its evaluations one after another in worker processes."""

    name = "local"
    remote = False

    def __init__(self, device: str = "auto", gpus: int | None = None, cpu_workers: int = 1) -> None:
        self.slots = local_slots(device, gpus, cpu_workers)
        self.device = resolve_device(device)
        self._cancelled = threading.Event()

    def describe(self) -> list[dict[str, Any]]:
        return [s.describe() for s in self.slots]

    def cancel(self) -> None:
        self._cancelled.set()

    def run(self, jobs: list[EvalJob], on_shape: ShapeCallback | None = None) -> Iterator[JobOutcome]:
        self._cancelled.clear()  # a cancel ends the run it was called in (as in the Ray executor), not the next
        pending: queue.Queue[EvalJob] = queue.Queue()
        for job in jobs:
            pending.put(job)
        done: queue.Queue[JobOutcome | BaseException] = queue.Queue()

        def serve(slot: Slot) -> None:
            # With one slot the next job is known: its first worker starts ahead (imports done, no GPU touched)
            # while this one runs (`start_worker_ahead`; on a GPU only).
            ahead_of: tuple[EvalJob, WorkerProcess | None] | None = None
            try:
                while not self._cancelled.is_set():
                    if ahead_of is not None:
                        (job, ahead), ahead_of = ahead_of, None
                    else:
                        try:
                            job, ahead = pending.get_nowait(), None
                        except queue.Empty:
                            return
                    if len(self.slots) == 1:
                        try:
                            following = pending.get_nowait()
                            ahead_of = (following, start_worker_ahead(
                                following.problem, following.spec, options_for_slot(following.options, slot)))
                        except queue.Empty:
                            pass
                    try:
                        result = evaluate_candidate(
                            job.problem, job.spec, options_for_slot(job.options, slot),
                            on_shape=(lambda r, j=job: on_shape(j, r)) if on_shape else None,  # type: ignore[misc]  # mypy cannot infer a lambda with default arguments
                            ahead=ahead)
                        placement = {"executor": self.name, **slot.describe()}
                        result.provenance["placement"] = placement
                        done.put(JobOutcome(job, result, placement))
                    except BaseException as exc:  # surfaced in the caller's thread
                        done.put(exc)
                    finally:
                        if ahead is not None:
                            ahead.discard()  # not taken (the evaluation failed before its worker): killed
            finally:
                if ahead_of is not None and ahead_of[1] is not None:
                    ahead_of[1].discard()

        threads = [threading.Thread(target=serve, args=(slot,), daemon=True, name=f"aka-slot-{slot.index}")
                   for slot in self.slots]
        for thread in threads:
            thread.start()
        remaining = len(jobs)
        try:
            while remaining and (any(t.is_alive() for t in threads) or not done.empty()):
                try:
                    item = done.get(timeout=0.2)
                except queue.Empty:
                    continue
                remaining -= 1
                if isinstance(item, BaseException):
                    self.cancel()
                    raise item
                yield item
        finally:
            self.cancel()
            for thread in threads:
                thread.join(timeout=0.1)
