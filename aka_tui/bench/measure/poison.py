"""Make unwritten outputs visible: uninitialised memory is filled with NaN (or the max integer).

`torch.empty` and friends fill new tensors when deterministic algorithms are on
(`torch.utils.deterministic.fill_uninitialized_memory`); on CUDA the caching allocator's free blocks
are also overwritten with 0xFF bytes (NaN in fp16/bf16/fp32) before the candidate runs, so memory
obtained any other way does not hold the reference's result either.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

import torch

_CHUNK_BYTES = 256 << 20
# Held from the harness's import on: the candidate is imported later, and patching torch._C afterwards does not
# reach this reference.
_set_deterministic_flag = torch._C._set_deterministic_algorithms


def _set_deterministic(mode: bool, warn_only: bool) -> None:
    """`torch.use_deterministic_algorithms`, without importing inductor for it: the public function imports
    torch._inductor.config (and with it dynamo, 1.5-2 s of every worker's start) to pass the flag on to inductor.
    When inductor is not loaded there is no compiler to tell."""
    if "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        _set_deterministic_flag(mode, warn_only=warn_only)


def poison_free_cuda_memory() -> int:
    """Overwrite the cached-but-free device memory with 0xFF; returns the bytes poisoned."""
    free_cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    chunks = []
    poisoned = 0
    remaining = free_cached
    size = min(_CHUNK_BYTES, max(remaining, 0))
    while remaining > 0 and size >= 512:
        try:
            chunk = torch.empty(size, dtype=torch.uint8, device="cuda")
        except RuntimeError:  # out of memory for this size: try smaller blocks
            size //= 2
            continue
        chunk.fill_(0xFF)
        chunks.append(chunk)
        poisoned += size
        remaining -= size
        size = min(size, remaining)
    del chunks  # the blocks return to the cache, now holding 0xFF
    return poisoned


@contextmanager
def poisoned_allocations(device: str) -> Iterator[None]:
    """Within the block, new uninitialised tensors are NaN-filled; CUDA free blocks are poisoned first."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        poison_free_cuda_memory()
    previous = torch.are_deterministic_algorithms_enabled()
    previous_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    previous_fill = torch.utils.deterministic.fill_uninitialized_memory  # type: ignore[attr-defined]
    _set_deterministic(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _set_deterministic(previous, warn_only=previous_warn)
        torch.utils.deterministic.fill_uninitialized_memory = previous_fill  # type: ignore[attr-defined]
