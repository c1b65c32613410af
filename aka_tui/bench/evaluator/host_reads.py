"""The values a candidate's own Python reads back from tensors, recorded in one run and replayed in another.

The compile-only check (target_compile.py) turns every launch into a compilation, so no kernel writes its
outputs. A candidate that reads a kernel's output on the host (`n = counts.max().item()`, then a grid or a buffer
of that size; compiler-seeded references with data-dependent sizes do this) would go on with whatever the empty
buffer held, and fail or take another path than on a GPU. So the check records those reads in a run whose kernels
really run (the interpreter, on the same inputs) and gives them back, in the same order, in the compile-only run.

Only reads made by the candidate's own code (the file it was loaded from) are recorded and replayed: reads inside
torch, Triton or the interpreter differ between the two runs and would shift the sequence.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

import torch

_READS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__")
MAX_VALUES = 100_000  # scalars a record may hold (a `.tolist()` of a large tensor counts each element)


class HostReads:
    """The reads seen so far; `after_launch` counts those with no value to replay that came after a compile-only
    launch (`launched()` says whether one has run): their values were never written."""

    def __init__(self, replay: list[Any] | None, launched: Callable[[], bool]) -> None:
        self.values: list[Any] = []
        self.replay = replay
        self.launched = launched
        self.after_launch = 0

    def seen(self, value: Any) -> Any:
        index = len(self.values)
        if self.replay is not None and index < len(self.replay):
            value = self.replay[index]
        elif self.launched():
            self.after_launch += 1
        self.values.append(value)
        return value

    def record(self) -> list[Any] | None:
        """The values for a replay; None when they are too many to hand to another process."""
        return None if _size(self.values) > MAX_VALUES else self.values


def _size(value: Any) -> int:
    return sum(_size(v) for v in value) if isinstance(value, (list, tuple)) else 1


@contextlib.contextmanager
def host_reads(candidate_file: str, replay: list[Any] | None = None,
               launched: Callable[[], bool] = lambda: False) -> Iterator[HostReads]:
    """While open, the tensor reads made from `candidate_file` go through a HostReads (recorded, or replayed
    from `replay`)."""
    reads = HostReads(replay, launched)
    originals = {name: getattr(torch.Tensor, name) for name in _READS}

    def wrapped(original: Any) -> Any:
        def read(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            value = original(self, *args, **kwargs)
            if sys._getframe(1).f_code.co_filename != candidate_file:
                return value
            return reads.seen(value)
        return read

    for name, original in originals.items():
        setattr(torch.Tensor, name, wrapped(original))
    try:
        yield reads
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
