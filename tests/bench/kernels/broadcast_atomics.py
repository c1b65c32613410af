"""Counts by atomic adds of a one-element value broadcast over the pointers (inductor's form of a bincount),
and a compare-and-swap with broadcast operands, for the interpreter test."""

import torch
import triton
import triton.language as tl


@triton.jit
def _count(index_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ok = offs < n
    index = tl.load(index_ptr + offs, mask=ok, other=0)
    tl.atomic_add(counts_ptr + tl.broadcast_to(index, [BLOCK]), tl.full([1], 1, tl.int32), ok, sem="relaxed")


@triton.jit
def _claim(slots_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    zero = tl.broadcast_to(tl.full([1], 0, tl.int32), [BLOCK])
    tl.atomic_cas(slots_ptr + offs, zero, tl.broadcast_to(tl.full([1], 7, tl.int32), [BLOCK]))


def counts(index: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, dtype=torch.int32)
    _count[(1,)](index, out, index.numel(), BLOCK=triton.next_power_of_2(index.numel()))
    return out


def claim_zeros(slots: torch.Tensor) -> torch.Tensor:
    _claim[(1,)](slots, slots.numel(), BLOCK=slots.numel())
    return slots
