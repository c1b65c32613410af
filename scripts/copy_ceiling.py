"""Copy bandwidth at the size of each memory-bound op's largest full shape, timed like a candidate.

A memory-bound kernel is compared with the calibrated copy bandwidth (a 4 GiB device-to-device copy), but the
largest shapes move 67-700 MB, where a plain copy itself is slower than at 4 GiB (launch ramp-up and tail are a
larger share). This measures the ceiling at each size: `dst.copy_(src)` moving the shape's bytes (read +
written, as the roofline counts them), with the evaluator's timer (`time_cuda`: L2 flushed before every call,
GPU-saturated pass) and 3 rotating buffer pairs like the timing input sets. The ops are those of
`roofline_tables.largest_memory_bound`, whose tables take this JSON as `--copy`. Prints a table and writes JSON.

    PYTHONPATH=. python3 scripts/copy_ceiling.py OUT.json [OP ...]        (on a CUDA GPU, from the checkout)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.lookup import default_suite_dir, load_suite
from aka_tui.bench.roofline.calibrate import measure_copy_tbps, time_copy
from aka_tui.bench.roofline.hardware import detect_profile
from aka_tui.bench.scoring.roofline_tables import largest_memory_bound


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("copy_ceiling.py needs a CUDA GPU")
        return 2
    out, ops = Path(argv[0]), argv[1:]
    timers = Timers.capture()
    profile = detect_profile("cuda")
    calibrated = measure_copy_tbps()
    rows = []
    for op, shape_id, nbytes in largest_memory_bound(load_suite(default_suite_dir()), profile, ops):
        stats = time_copy(nbytes, timers, profile.l2_bytes)
        ms, saturated = stats.median_ms, bool(stats.saturated)
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
