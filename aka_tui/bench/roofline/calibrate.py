"""`aka hw calibrate`: measure copy bandwidth, matmul rates and the empty-launch time on this GPU."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any, Callable

import torch
import triton

from aka_tui.bench.roofline.hardware import HardwareProfile, detect_profile, with_measurements
from aka_tui.errors import HardwareProfileError

if TYPE_CHECKING:
    from aka_tui.bench.measure.results import TimingStats
    from aka_tui.bench.measure.timing import Timers


def _median_event_ms(fn: Callable[[], Any], reps: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def measure_copy_tbps(size_bytes: int = 4 << 30) -> float:
    """Device-to-device copy; bytes read plus bytes written over time."""
    src = torch.randint(0, 255, (size_bytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = _median_event_ms(lambda: dst.copy_(src), reps=20)
    return 2 * size_bytes / (ms * 1e-3) / 1e12


def time_copy(total_bytes: float, timers: Timers, l2_bytes: int, sets: int = 3) -> TimingStats:
    """A device copy moving `total_bytes` (half read, half written, as the roofline counts bytes), timed like a
    candidate (`time_cuda`: L2 flushed before every call, `sets` rotating buffer pairs): the ceiling a
    memory-bound kernel of that size can reach, which below ~200 MB is well under the 4 GiB figure."""
    from aka_tui.bench.measure.timing import time_cuda

    half = int(total_bytes // 2) // 16 * 16
    pairs = [{"src": torch.randint(0, 255, (half,), dtype=torch.uint8, device="cuda"),
              "dst": torch.empty(half, dtype=torch.uint8, device="cuda")} for _ in range(sets)]
    return time_cuda(lambda s: s["dst"].copy_(s["src"]), pairs, timers, l2_bytes)


def measure_matmul_tflops(dtype: str, n: int = 8192) -> float:
    """Square n×n×n product through the vendor library (bf16, fp8 via _scaled_mm, fp32 without TF32)."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    if dtype == "bf16":
        a, b = a.bfloat16(), b.bfloat16()
        fn: Callable[[], Any] = lambda: a @ b  # noqa: E731
    elif dtype == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()  # column-major second operand
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
    elif dtype == "fp32":
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            ms = _median_event_ms(lambda: a @ b, reps=10)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        return 2 * n**3 / (ms * 1e-3) / 1e12
    else:
        raise ValueError(dtype)
    ms = _median_event_ms(fn, reps=20)
    return 2 * n**3 / (ms * 1e-3) / 1e12


def measure_empty_launch_us(l2_bytes: int) -> float:
    """Empty Triton kernel timed like a candidate (L2 flush before each call, events around it)."""
    from aka_tui.bench.measure.timing import Timers
    from aka_tui.bench.roofline.empty_kernel import measure_empty_launch_ms

    return measure_empty_launch_ms(Timers.capture(), l2_bytes) * 1e3


def calibrate(device: str = "cuda") -> HardwareProfile:
    """Measure this GPU and return a `<sku>-measured` profile (datasheet peaks kept for unmeasured paths)."""
    if not torch.cuda.is_available():
        raise HardwareProfileError("calibration needs a CUDA GPU; torch sees none")
    if device.startswith("cuda") and torch.device(device).index is not None:
        torch.cuda.set_device(torch.device(device))
    base = detect_profile(device if device != "auto" else "cuda")
    copy_tbps = measure_copy_tbps()
    peaks = {"bf16_tc": measure_matmul_tflops("bf16"), "fp32": measure_matmul_tflops("fp32")}
    peaks["fp16_tc"] = peaks["bf16_tc"]
    try:
        peaks["fp8_tc"] = measure_matmul_tflops("fp8")
    except (RuntimeError, TypeError) as exc:  # no fp8 path on this GPU
        peaks_note = f"fp8 not measured: {exc}"
    else:
        peaks_note = ""
    launch_us = measure_empty_launch_us(base.l2_bytes)
    measurements = {
        "device_name": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
        "copy_tbps": copy_tbps, "datasheet_hbm_tbps": base.hbm_bandwidth_tbps, "matmul_tflops": dict(peaks), "empty_launch_us": launch_us,
        "datasheet_ratio": {k: v / base.peaks_tflops[k] for k, v in peaks.items() if k in base.peaks_tflops},
        "note": peaks_note,
    }
    return with_measurements(base, peaks, copy_tbps, launch_us, measurements)
