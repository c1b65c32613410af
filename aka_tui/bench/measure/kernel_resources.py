"""Registers, spills, shared memory and theoretical occupancy of a compiled Triton kernel (GPU only).

After a launch on a GPU, Triton's compiled kernel carries `n_regs` and `n_spills` (from loading the binary)
and its metadata (`num_warps`, `num_stages`, `shared` bytes). Under the CPU interpreter there is no compiled
kernel, so nothing is recorded and the app says "n/a (interpreter)".

Theoretical occupancy (NVIDIA): resident warps per SM over the SM's maximum, with blocks per SM limited by
warps, by registers (allocated per warp in units of 256) and by shared memory (1 KiB reserved per block
on sm_80 and newer). The per-SM block-count limit is not modelled (it binds only for 1-warp kernels).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

REGISTER_ALLOCATION_UNIT = 256  # registers per warp are allocated in this unit on sm_50 and newer
REGISTERS_PER_SM = 65536  # every NVIDIA SM since sm_50; used when torch does not report regs_per_multiprocessor
SHARED_RESERVED_PER_BLOCK_BYTES = 1024  # the driver reserves this per block on sm_80 and newer


@dataclass(frozen=True)
class SmLimits:
    """What one SM offers: threads, registers and shared memory (from the CUDA device properties)."""

    max_threads: int
    registers: int
    shared_bytes: int
    warp_size: int
    compute_major: int


def theoretical_occupancy(n_regs: int, shared_bytes: int, num_warps: int, sm: SmLimits
                          ) -> tuple[float, int, str]:
    """(occupancy in [0, 1], resident blocks per SM, the resource that limits them)."""
    max_warps = sm.max_threads // sm.warp_size
    limits = {"warps": max_warps // max(num_warps, 1)}
    if n_regs > 0:
        regs_per_warp = math.ceil(n_regs * sm.warp_size / REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
        limits["registers"] = (sm.registers // regs_per_warp) // max(num_warps, 1)
    if shared_bytes > 0:
        reserved = SHARED_RESERVED_PER_BLOCK_BYTES if sm.compute_major >= 8 else 0
        limits["shared memory"] = sm.shared_bytes // (shared_bytes + reserved)
    limiter = min(limits, key=lambda name: limits[name])
    blocks = limits[limiter]
    return min(blocks * num_warps / max_warps, 1.0), blocks, limiter


@functools.lru_cache(maxsize=8)
def sm_limits(device_index: int) -> SmLimits | None:
    """The SM limits of a CUDA device (None on ROCm, whose register files follow another model)."""
    import torch

    if torch.version.hip is not None:
        return None
    props = torch.cuda.get_device_properties(device_index)
    return SmLimits(int(props.max_threads_per_multi_processor),
                    int(getattr(props, "regs_per_multiprocessor", None) or REGISTERS_PER_SM),
                    int(props.shared_memory_per_multiprocessor), int(getattr(props, "warp_size", 32)),
                    int(props.major))


def compiled_resources(compiled: Any) -> dict[str, Any] | None:
    """The resources of a kernel Triton compiled and launched, or None when there is no compiled kernel."""
    n_regs = getattr(compiled, "n_regs", None)
    metadata = getattr(compiled, "metadata", None)
    if n_regs is None or metadata is None:
        return None
    import torch

    num_warps = int(getattr(metadata, "num_warps", 0) or 0)
    shared_bytes = int(getattr(metadata, "shared", 0) or 0)
    record: dict[str, Any] = {"n_regs": int(n_regs), "n_spills": int(getattr(compiled, "n_spills", 0) or 0),
                              "shared_bytes": shared_bytes, "num_warps": num_warps,
                              "num_stages": int(getattr(metadata, "num_stages", 0) or 0)}
    limits = sm_limits(torch.cuda.current_device()) if torch.cuda.is_available() else None
    if limits is not None and num_warps > 0:
        occupancy, blocks, limiter = theoretical_occupancy(int(n_regs), shared_bytes, num_warps, limits)
        record.update(occupancy=round(occupancy, 4), blocks_per_sm=blocks, occupancy_limit=limiter)
    return record
