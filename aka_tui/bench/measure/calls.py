"""The one loop every candidate call goes through, and the failures a measurement ends with.

A measurement is a plan: a generator that yields the calls it wants made (`Call`) and takes each one's output
from it (`called`); everything else (references, comparisons, events, flushes, profiler sessions, samples) runs inside the plan
between two calls. `run_calls` makes each call from the same line, so the candidate's `forward` sees the same
frames above it whether the call is checked, audited, profiled, timed or a warm-up.
"""

from __future__ import annotations

import traceback
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, TypeVar

import torch

from aka_tui.bench.measure.results import StageError

CUDA_FATAL_MARKERS = ("illegal memory access", "device-side assert", "unspecified launch failure",
                      "misaligned address", "illegal instruction", "CUDA error: an illegal")

T = TypeVar("T")
Plan = Generator["Call", Any, T]


@dataclass
class Call:
    """One call of the candidate: its inputs, the stage a failure in it is reported under, and its output once
    made, until the plan takes it."""

    inputs: dict[str, Any]
    stage: str
    output: Any = field(default=None, repr=False)

    def take(self) -> Any:
        out, self.output = self.output, None
        return out


def called(call: Call) -> Generator[Call, Any, Any]:
    """Yield `call` to the loop and return its output: the plan's only way to a call's result. The loop keeps no
    reference to the output (nor the inputs) once the plan goes on, so a case the plan builds next has the
    device's memory without them."""
    yield call
    return call.take()


class MeasureFailure(Exception):
    """The verdict a measurement ends with (a StageError), raised anywhere in a plan."""

    def __init__(self, status: str, stage: str, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.error = StageError(stage, status, message, trace)
        self.cause: BaseException | None = None  # the candidate's own exception, when it raised


class CandidateRaised(Exception):
    """Thrown into the plan when a call raised, so the plan's cleanup runs (profiler, poison, modes)."""

    def __init__(self, exc: BaseException, stage: str) -> None:
        super().__init__(str(exc))
        self.exc = exc
        self.stage = stage


def trace_of(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def is_cuda_fatal(exc: BaseException) -> bool:
    return any(marker in str(exc) for marker in CUDA_FATAL_MARKERS)


def run_calls(model: Callable[..., Any], plan: Plan[T],
              watch: Callable[[Call], AbstractContextManager[Any]] | None = None) -> T:
    """Make every call `plan` asks for, from this one place; returns what the plan returns. `watch(call)`, when
    given, is entered around the candidate's call alone (the plan's standing audit on the CPU).

    An exception from the candidate is thrown into the plan (whose cleanup runs) and comes back as a
    `MeasureFailure` (`runtime_error`, or `cuda_error` for a fatal CUDA error)."""
    pending: CandidateRaised | None = None
    while True:
        try:
            call = plan.throw(pending) if pending is not None else plan.send(None)
        except StopIteration as stop:
            return stop.value
        except CandidateRaised as raised:
            exc = raised.exc
            status = "cuda_error" if is_cuda_fatal(exc) else "runtime_error"
            failure = MeasureFailure(status, raised.stage, f"{type(exc).__name__}: {str(exc).strip()[:500]}",
                                     trace_of(exc))
            failure.cause = exc
            raise failure from None
        pending = None
        try:
            with torch.no_grad(), watch(call) if watch is not None else nullcontext():
                call.output = model(**call.inputs)
        except Exception as exc:  # the candidate's error is data
            pending = CandidateRaised(exc, call.stage)
        # The plan owns the inputs and the output (`called`): its next stage may build another case, whose
        # reference can need all of the device's memory (a copy of a case's inputs held here outlived its call and
        # ran a 256-expert MoE reference out of the H200's memory).
        del call
