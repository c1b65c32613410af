"""The GPU's clocks while a bench run times kernels, sampled with `nvidia-smi` once a second.

A compute-bound kernel's time follows the SM clock, and the clock drops when the board caps its power or heat
(H200, 2026-12-03: 1980 → 1575 MHz with the software power-cap reason set while a bf16 GEMM ran; that GEMM
read ~10% slower than in another run). A report that says when this happened, and during which operators,
tells a reader which figures a second run may move. Best effort: without `nvidia-smi` (a CPU machine, a GPU of
another vendor) nothing is sampled and the report says nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from aka_tui.environment import environment_snapshot

QUERY = "timestamp,index,clocks.sm,clocks.max.sm,power.draw,clocks_throttle_reasons.active"
POWER_CAP = 0x4  # clocks_event_reasons: SW power cap
SLOWDOWN = 0x8 | 0x20 | 0x40 | 0x80  # HW slowdown, SW / HW thermal slowdown, HW power brake


@dataclass(frozen=True)
class ClockSample:
    unix: float
    gpu: int
    sm_mhz: float
    max_sm_mhz: float
    power_w: float | None
    reasons: int


def parse_samples(text: str) -> list[ClockSample]:
    """`nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits` lines as samples; other lines are skipped."""
    samples = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 6:
            continue
        try:
            unix = datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()  # the machine's local time
            power = float(cells[4]) if cells[4] not in ("[N/A]", "N/A") else None
            samples.append(ClockSample(unix, int(cells[1]), float(cells[2]), float(cells[3]), power,
                                       int(cells[5], 16)))
        except ValueError:
            continue
    return samples


def summarise(samples: list[ClockSample]) -> dict[str, Any]:
    """Clock range and how many samples had the power cap or a slowdown set (per GPU index)."""
    by_gpu: dict[int, list[ClockSample]] = {}
    for s in samples:
        by_gpu.setdefault(s.gpu, []).append(s)
    return {str(gpu): {"samples": len(ss), "sm_mhz_min": min(s.sm_mhz for s in ss),
                       "sm_mhz_max": max(s.sm_mhz for s in ss), "max_sm_mhz": max(s.max_sm_mhz for s in ss),
                       "power_cap_samples": sum(1 for s in ss if s.reasons & POWER_CAP),
                       "slowdown_samples": sum(1 for s in ss if s.reasons & SLOWDOWN)}
            for gpu, ss in sorted(by_gpu.items())}


def capped_ops(samples: list[ClockSample], windows: dict[str, tuple[float, float]]) -> dict[str, int]:
    """Operators during whose window (start, end in unix seconds) the power cap or a slowdown was sampled, with
    the number of such samples. Only with one GPU sampled: with several, which GPU ran an operator is not known
    here."""
    if len({s.gpu for s in samples}) != 1:
        return {}
    hot = [s.unix for s in samples if s.reasons & (POWER_CAP | SLOWDOWN)]
    counts = {op: sum(1 for t in hot if start <= t <= end) for op, (start, end) in windows.items()}
    return {op: n for op, n in counts.items() if n}


class ClockSampler:
    """`nvidia-smi -lms` in the background for the length of a `with` block; `.samples` afterwards."""

    def __init__(self, interval_ms: int = 1000) -> None:
        self.interval_ms = interval_ms
        self.samples: list[ClockSample] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    def __enter__(self) -> ClockSampler:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return self
        self._out = tempfile.TemporaryFile()  # a file, not a pipe: a long run never fills a pipe's buffer
        try:
            self._proc = subprocess.Popen([exe, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                                           f"-lms={self.interval_ms}"], stdout=self._out,
                                          stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                          env=environment_snapshot())
        except OSError:
            self._proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._out is not None:
            self._out.seek(0)
            self.samples = parse_samples(self._out.read().decode(errors="replace"))
            self._out.close()


def clocks_record(samples: list[ClockSample], windows: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """What a bench report keeps: the per-GPU summary and the operators timed while clocks were held down."""
    if not samples:
        return {}
    return {"interval_s": round(samples[1].unix - samples[0].unix, 3) if len(samples) > 1 else None,
            "gpus": summarise(samples), "held_down_during": capped_ops(samples, windows)}


def clocks_line(record: dict[str, Any]) -> str | None:
    """One Markdown bullet for a report, or None without samples."""
    gpus = record.get("gpus") or {}
    if not gpus:
        return None
    parts = []
    for gpu, g in gpus.items():
        held = g["power_cap_samples"] + g["slowdown_samples"]
        parts.append(f"GPU {gpu}: SM {g['sm_mhz_min']:.0f}–{g['sm_mhz_max']:.0f} MHz (max {g['max_sm_mhz']:.0f}), "
                     f"power cap or slowdown in {held} of {g['samples']} samples")
    during = record.get("held_down_during") or {}
    tail = ("; held down while timing " + ", ".join(f"{op} ({n})" for op, n in during.items())) if during else ""
    return "- GPU clocks (nvidia-smi, sampled through the run): " + "; ".join(parts) + tail

