"""Make unwritten outputs visible: uninitialised memory is filled with NaN (or the max integer).

`torch.empty` and friends fill new tensors when deterministic algorithms are on
(`torch.utils.deterministic.fill_uninitialized_memory`); on CUDA the caching allocator's free blocks
are also overwritten with 0xFF bytes (NaN in fp16/bf16/fp32) before the candidate runs, so memory
obtained any other way does not hold the reference's result either.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

_CHUNK_BYTES = 256 << 20


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
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous, warn_only=previous_warn)
        torch.utils.deterministic.fill_uninitialized_memory = previous_fill  # type: ignore[attr-defined]
