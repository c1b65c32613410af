"""Copy bandwidth at the size of each memory-bound op's largest full shape, timed like a candidate.

Issue 8 asks memory-bound kernels for >= 85% of the calibrated copy bandwidth (a 4 GiB device-to-device copy)
at their largest shapes. Those shapes move 67-700 MB, where a plain copy itself is slower than at 4 GiB
(launch ramp-up and tail are a larger share), so this measures the ceiling at each size: `dst.copy_(src)`
moving the shape's bytes (read + written, as the roofline counts them), with the evaluator's timer
(`time_cuda`: L2 flushed before every call, GPU-saturated pass) and 3 rotating buffer pairs like the timing
input sets. Prints a table and writes JSON.

    PYTHONPATH=. python3 scripts/copy_ceiling.py OUT.json [OP ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from aka_tui.bench.measure.timing import Timers, time_cuda  # noqa: E402
from aka_tui.bench.problem.lookup import load_suite  # noqa: E402
from aka_tui.bench.roofline.bound import bound  # noqa: E402
from aka_tui.bench.roofline.calibrate import measure_copy_tbps  # noqa: E402
from aka_tui.bench.roofline.hardware import HardwareProfile, detect_profile  # noqa: E402


def largest_memory_bound(suite_dir: str, ops: list[str], profile: HardwareProfile) -> list[tuple[str, str, float]]:
    """(op, shape id, bytes moved) of each op whose largest full shape (by bytes) is memory-bound."""
    rows = []
    for name, problem in load_suite(suite_dir).problems.items():
        if ops and name not in ops:
            continue
        shapes = [s for s in problem.shapes_for("full") if s.shape_id in problem.roofline]
        if not shapes:
            continue
        shape = max(shapes, key=lambda s: problem.roofline[s.shape_id].bytes_total)
        entry = problem.roofline[shape.shape_id]
        if bound(entry, profile).bottleneck == "memory":
            rows.append((name, shape.shape_id, entry.bytes_total))
    return rows


def copy_ms(total_bytes: float, timers: Timers, l2_bytes: int) -> tuple[float, bool]:
    half = int(total_bytes // 2) // 16 * 16
    sets = [{"src": torch.randint(0, 255, (half,), dtype=torch.uint8, device="cuda"),
             "dst": torch.empty(half, dtype=torch.uint8, device="cuda")} for _ in range(3)]
    stats = time_cuda(lambda s: s["dst"].copy_(s["src"]), sets, timers, l2_bytes)
    return stats.median_ms, bool(stats.saturated)


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("copy_ceiling.py needs a CUDA GPU")
        return 2
    out, ops = Path(argv[0]), argv[1:]
    timers = Timers.capture()
    profile = detect_profile("cuda")
    calibrated = measure_copy_tbps()
    rows = []
    for op, shape_id, nbytes in largest_memory_bound("problems", ops, profile):
        ms, saturated = copy_ms(nbytes, timers, profile.l2_bytes)
        tbps = nbytes / (ms * 1e-3) / 1e12
        rows.append({"op": op, "shape": shape_id, "bytes": nbytes, "copy_ms": ms, "copy_tbps": tbps,
                     "copy_vs_calibrated": tbps / calibrated, "saturated": saturated})
    out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "calibrated_copy_tbps": calibrated,
                               "rows": rows}, indent=1))
    print(f"calibrated copy (4 GiB): {calibrated:.3f} TB/s on {torch.cuda.get_device_name()}")
    print(f"{'op':28s} {'shape':46s} {'MB':>8s} {'copy us':>8s} {'TB/s':>6s} {'of 4GiB':>7s}")
    for r in rows:
        print(f"{r['op']:28s} {r['shape'][:46]:46s} {r['bytes'] / 1e6:8.1f} {r['copy_ms'] * 1e3:8.2f} "
              f"{r['copy_tbps']:6.2f} {r['copy_vs_calibrated']:7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
