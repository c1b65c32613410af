"""GPU fallback attribution: which device kernels a forward ran, whose they are, and on which stream.

The forward is profiled with torch.profiler (CUDA activity). Each device kernel is attributed to the
candidate when its name is one of the Triton kernels the candidate's file defines and launched; every
other kernel (aten, cuBLAS/cuBLASLt, cuDNN, NCCL, memcpy/memset, another library's Triton) is foreign, except
the short device-to-host copies of the scalars the forward read with `item()` (the dispatch audit counts them;
an output whose size depends on the data needs one such read): up to that many, each at most
READBACK_COPY_MAX_US, are set aside, on neither side. own_share = own device time / total device time (the
copies set aside excluded); real ⇔ an own kernel ran and own_share ≥ threshold.
A marker op on the current stream tells which stream the timer watches; candidate work on any other
stream escaped the timed stream.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_OWN_SHARE_THRESHOLD = 0.9
READBACK_COPY = "Memcpy DtoH"
READBACK_COPY_MAX_US = 10.0  # one scalar's copy takes 1-3 us; a copy of a whole tensor to the host takes longer


@dataclass(frozen=True)
class DeviceKernel:
    name: str
    duration_us: float
    stream: int | None


def is_own(name: str, own_names: set[str]) -> bool:
    """Triton names a CUDA kernel after its JIT function (some versions add a signature suffix)."""
    return any(name == own or name.startswith(own + "_") for own in own_names)


@dataclass(frozen=True)
class Attribution:
    own_us: float
    foreign_us: dict[str, float]
    own_kernels: dict[str, float]
    own_share: float
    escaped_streams: bool
    kernels_seen: int
    readback_us: float = 0.0  # the scalar reads' copies set aside

    def verdict(self, threshold: float) -> tuple[bool, str]:
        if not self.own_kernels:
            return False, "no device kernel of the candidate ran"
        if self.own_share < threshold:
            top = ", ".join(f"{k} {v:.1f}us" for k, v in sorted(self.foreign_us.items(), key=lambda kv: -kv[1])[:4])
            return False, f"own_share {self.own_share:.2f} < {threshold:.2f}; foreign: {top}"
        return True, ""


def attribute(kernels: list[DeviceKernel], own_names: set[str], marker_stream: int | None,
              readback_copies: int = 0) -> Attribution:
    """Split device time into the candidate's kernels and foreign ones, setting aside up to `readback_copies`
    short device-to-host copies (the scalar reads the dispatch audit counted; pure, unit-tested on the CPU)."""
    own: dict[str, float] = defaultdict(float)
    foreign: dict[str, float] = defaultdict(float)
    escaped = False
    readback_us = 0.0
    for kernel in kernels:
        if is_own(kernel.name, own_names):
            own[kernel.name] += kernel.duration_us
            if marker_stream is not None and kernel.stream is not None and kernel.stream != marker_stream:
                escaped = True
        elif readback_copies > 0 and kernel.name.startswith(READBACK_COPY) \
                and kernel.duration_us <= READBACK_COPY_MAX_US:
            readback_copies -= 1
            readback_us += kernel.duration_us
        else:
            foreign[kernel.name[:120]] += kernel.duration_us
    own_us = sum(own.values())
    total = own_us + sum(foreign.values())
    return Attribution(own_us, dict(foreign), dict(own), own_us / total if total > 0 else 0.0, escaped, len(kernels),
                       readback_us)


MARKER_NAME = "aka_stream_marker"


def device_events(prof: Any) -> list[DeviceKernel]:
    """The device kernels a finished torch.profiler session saw, in start order (annotations excluded)."""
    import torch

    raw = None
    try:
        raw = prof.profiler.kineto_results.events()  # type: ignore[union-attr]
    except AttributeError:
        raw = None
    if raw is not None:
        # record_function ranges show up on the GPU timeline as user annotations, not kernels: our marker's
        # range, and any range a candidate names after its own kernel to disguise foreign work inside it.
        ordered = sorted((e for e in raw if e.device_type() == torch.autograd.DeviceType.CUDA
                          and not _is_annotation(e)), key=lambda e: e.start_ns())
        return [DeviceKernel(e.name(), e.duration_ns() / 1e3, int(e.device_resource_id())) for e in ordered]
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
              and not getattr(e, "is_user_annotation", False)]
    return [DeviceKernel(e.name, float(e.time_range.elapsed_us()), None)
            for e in sorted(events, key=lambda e: e.time_range.start)]


def _named(kernel: DeviceKernel, name: str) -> bool:
    return kernel.name == name or kernel.name.startswith(name + "_")


def split_calls(kernels: list[DeviceKernel], marker_name: str,
                harness: tuple[str, ...] = ()) -> tuple[list[list[DeviceKernel]], int | None, int]:
    """Device kernels grouped per call, each call preceded by a marker kernel named `marker_name` on the
    current stream: (kernels per call, the markers' stream, how many harness kernels — markers and the kernels
    named in `harness` — were seen). Harness kernels belong to no call."""
    calls: list[list[DeviceKernel]] = []
    stream: int | None = None
    seen = 0
    for kernel in kernels:
        if _named(kernel, marker_name):
            seen += 1
            stream = kernel.stream if stream is None else stream
            calls.append([])
        elif any(_named(kernel, name) for name in harness):
            seen += 1
        elif calls:
            calls[-1].append(kernel)
    return calls, stream, seen


def profile_device_kernels(run: Callable[[], Any]) -> tuple[list[DeviceKernel], int | None]:
    """Device kernels of one call of `run` (after a marker on the current stream) and the marker's stream."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    marker = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with torch.profiler.record_function(MARKER_NAME):
            marker.add_(1.0)
        run()
        torch.cuda.synchronize()
    kernels = device_events(prof)
    if not kernels:
        return [], None
    return kernels[1:], kernels[0].stream  # the marker's add kernel is the first device event


def _is_annotation(event: Any) -> bool:
    """True for a GPU-timeline user annotation (a record_function range), which is no device work."""
    flag = getattr(event, "is_user_annotation", None)
    if callable(flag) and flag():
        return True
    kind = getattr(event, "activity_type", None)
    return callable(kind) and "annotation" in str(kind()).lower()
