"""Where evaluations run: one interface, a local backend (one slot per visible GPU) and a Ray backend.

An executor takes evaluation jobs (problem, candidate, options), runs them on its slots and streams each
result back as it finishes. Timing integrity under concurrency rests on two rules kept here:
- a slot is one GPU and runs one evaluation at a time (its worker process sees only that GPU), and
- every CUDA evaluation holds an exclusive per-GPU file lock (`gpu_lock`), so two aka processes on one
  machine (a bench and the TUI, say) never time on the same GPU at once.
Each result records the node and GPU that produced it, and is scored against that GPU's own profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions
from aka_tui.bench.measure.results import CandidateResult, ShapeResult
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.errors import EvaluationError


@dataclass
class EvalJob:
    """One evaluation: a candidate (or baseline) on one problem with given options."""

    key: str
    problem: Problem
    spec: CandidateSpec
    options: EvalOptions


@dataclass
class JobOutcome:
    """A finished job: its result, and where it ran."""

    job: EvalJob
    result: CandidateResult
    placement: dict[str, Any] = field(default_factory=dict)
    profile: HardwareProfile | None = None  # the profile it was scored against, when it ran elsewhere


ShapeCallback = Callable[[EvalJob, ShapeResult], None]


class Executor(Protocol):
    """What `aka bench`, `aka optimize` and the TUI submit evaluations to."""

    name: str
    remote: bool  # True when evaluations run on other machines (the caller's GPU is not the one measured)
    device: str  # what the slots evaluate on: "cpu", "cuda" or "cuda:N"

    def describe(self) -> list[dict[str, Any]]:
        """One entry per slot: node, GPU (or CPU worker) and its name."""
        ...

    def run(self, jobs: list[EvalJob], on_shape: ShapeCallback | None = None) -> Iterator[JobOutcome]:
        """Run every job; yield outcomes in completion order."""
        ...

    def cancel(self) -> None:
        """Stop handing out jobs; running evaluations finish (their workers are bounded by timeouts)."""
        ...


def make_executor(name: str, device: str = "auto", gpus: int | None = None, cpu_workers: int = 1,
                  ray_address: str | None = None) -> Executor:
    """`local` or `ray` (the latter needs the optional `ray` extra)."""
    if name == "local":
        from aka_tui.executors.local import LocalExecutor

        return LocalExecutor(device, gpus, cpu_workers)
    if name == "ray":
        from aka_tui.executors.ray_cluster import RayExecutor

        return RayExecutor(address=ray_address or "auto", device=device, gpus=gpus)
    raise EvaluationError(f"unknown executor {name!r}: use local or ray")
