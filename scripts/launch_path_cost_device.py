"""Where a small kernel's host time per call goes (a CUDA GPU): the KB RMSNorm launched six ways, each as N calls
issued back to back (wall time / N; the kernel takes ~2 us, so the host paces the calls).

  direct         the compiled kernel's launcher (CompiledKernel.run), stream looked up once
  direct_stream  the same, the stream looked up on every call (torch.cuda.current_stream())
  direct+empty   the same as direct plus the output's torch.empty
  jit            Triton's own launch path, kernel[grid](...) (argument binding, specialisation, cache key)
  ours           the KB launcher (output allocation, tile plan, Triton's launch path)
  torch.compile  the problem's reference compiled (inductor's generated launcher)

Launching through the compiled handle skips Triton's JITFunction.run, which the evaluator patches to see every
launch (aka_tui/bench/measure/audit.py): such a kernel would go unseen, so the KB launchers keep Triton's path.

    PYTHONPATH=. python3 scripts/launch_path_cost_device.py [ROWS] [COLS]      (default 256 4096)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    import torch
    from triton.runtime import driver

    from aka_tui.bench.problem.module_loading import import_file

    rows, cols = (int(argv[0]), int(argv[1])) if len(argv) >= 2 else (256, 4096)
    kernel = import_file(ROOT / "kb/family/norm/rms_norm.py", "launch_cost_kernel")
    reference = import_file(ROOT / "problems/rms_norm/reference.py", "launch_cost_reference")
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    few_rows = rows <= kernel.FEW_ROWS_PER_SM * kernel._sm_count(x.device)  # as the launcher decides it
    rows_per, block, single, warps, stages, _, const_cols = kernel._plan(cols, few_rows, dict(kernel.TUNABLES))
    constexprs = dict(ROWS=rows_per, BLOCK=block, SINGLE_TILE=single, EARLY_WEIGHTS=True, N_COLS=const_cols)
    args = (x, w, y, rows, cols, cols, cols, 1e-5)
    grid = (-(-rows // rows_per),)
    compiled = kernel._rms_norm_kernel[grid](*args, **constexprs, num_warps=warps, num_stages=stages)
    stream = driver.active.get_current_stream(driver.active.get_current_device())
    full = (*args, *constexprs.values())

    def direct(out=y, s=None):  # type: ignore[no-untyped-def]
        compiled.run(grid[0], 1, 1, s or stream, compiled.function, compiled.packed_metadata, None, None, None,
                     *full[:2], out, *full[3:])

    model = torch.compile(reference.Model(cols, 1e-5).cuda(), dynamic=False)
    calls = {
        "direct": direct,
        "direct_stream": lambda: direct(s=torch.cuda.current_stream().cuda_stream),
        "direct+empty": lambda: direct(out=torch.empty(x.shape, dtype=x.dtype, device=x.device)),
        "jit": lambda: kernel._rms_norm_kernel[grid](*args, **constexprs, num_warps=warps, num_stages=stages),
        "ours": lambda: kernel.launch_rms_norm(x, w, 1e-5),
        "torch.compile": lambda: model(x, w),
    }
    for call in calls.values():
        call()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(5):
        for name, call in calls.items():
            torch.cuda.synchronize()
            began = time.perf_counter()
            for _ in range(3000):
                call()
            times[name].append((time.perf_counter() - began) / 3000 * 1e6)
            torch.cuda.synchronize()
    print(f"rms_norm {rows} x {cols}: host us per call, median of 5 rounds of 3000 calls")
    for name, values in times.items():
        print(f"{name:15s} {statistics.median(values):6.2f} (min {min(values):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
