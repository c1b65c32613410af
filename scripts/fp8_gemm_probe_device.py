"""Accuracy and speed of the KB block-scaled fp8 GEMM's configurations on a GPU, side by side.

For each `MxNxK` shape: operands quantised to e4m3 with one scale per row and 128-wide K group (A) and per
128 x 128 block (B), the exact result computed in float64 from the dequantised operands, and per configuration
the time (`triton.testing.do_bench` median), TFLOP/s, the largest absolute error and the share of elements
outside `atol = rtol = TOL` (the evaluator's floor for fp8 inputs is 5e-3). Fastest first, one Markdown table
per shape.

    PYTHONPATH=. python3 scripts/fp8_gemm_probe_device.py 4096x4096x4096 65536x2048x2048
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUP = 128
# name -> tunables over the kernel's defaults
CONFIGS: dict[str, dict[str, int]] = {
    "fp8 tma (defaults)": {},
    "fp8 tma bk64": {"BLOCK_K": 64},
    "fp8 tma bk32": {"BLOCK_K": 32},
    "fp8 tma 128x128 w8": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8},
    "upcast in loop": {"UPCAST": 1, "UPCAST_PASS": 0},
    "upcast pass 64x128x128 w4 s3": {"UPCAST": 1},
    "upcast pass 128x128x64 w8 s4": {"UPCAST": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64,
                                     "num_warps": 8, "num_stages": 4},
    "upcast pass 128x128x128 w8 s3": {"UPCAST": 1, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8},
    "upcast pass 128x256x64 w8 s3": {"UPCAST": 1, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                                     "num_warps": 8},
    "upcast pass 64x256x64 w4 s4": {"UPCAST": 1, "BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 4},
}
# the fp16 copies with one accumulator rescaled between K groups (RESCALE): no second register tile
for _bm, _bn, _bk, _s in ((128, 128, 128, 3), (128, 128, 64, 3), (128, 256, 64, 3), (128, 256, 64, 4),
                          (256, 128, 64, 3), (128, 256, 128, 2)):
    CONFIGS[f"rescale {_bm}x{_bn}x{_bk} w8 s{_s}"] = {"UPCAST": 1, "RESCALE": 1, "BLOCK_M": _bm, "BLOCK_N": _bn,
                                                      "BLOCK_K": _bk, "num_warps": 8, "num_stages": _s}


def quantised(m: int, n: int, k: int):
    """(a, a_scale, b, b_scale) block-scaled e4m3 operands from standard normal values."""
    import torch

    fp8_max = torch.finfo(torch.float8_e4m3fn).max
    a_raw = torch.randn(m, k, device="cuda")
    a_scale = (a_raw.abs().view(m, k // GROUP, GROUP).amax(-1) / fp8_max).clamp(min=1e-10)
    a = (a_raw / a_scale.repeat_interleave(GROUP, 1)).clamp(-fp8_max, fp8_max).to(torch.float8_e4m3fn)
    del a_raw
    b_raw = torch.randn(n, k, device="cuda")
    b_scale = (b_raw.abs().view(n // GROUP, GROUP, k // GROUP, GROUP).amax((1, 3)) / fp8_max).clamp(min=1e-10)
    full = b_scale.repeat_interleave(GROUP, 0).repeat_interleave(GROUP, 1)
    b = (b_raw / full).clamp(-fp8_max, fp8_max).to(torch.float8_e4m3fn)
    return a, a_scale, b, b_scale


def exact(a, a_scale, b, b_scale):
    """float64 product of the dequantised operands, in row chunks (bounded memory)."""
    import torch

    bd = b.double() * b_scale.double().repeat_interleave(GROUP, 0).repeat_interleave(GROUP, 1)
    out = torch.empty(a.shape[0], b.shape[0], dtype=torch.float64, device=a.device)
    for r in range(0, a.shape[0], 8192):
        ad = a[r:r + 8192].double() * a_scale[r:r + 8192].double().repeat_interleave(GROUP, 1)
        out[r:r + 8192] = ad @ bd.T
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+", help="MxNxK, N and K multiples of 128")
    parser.add_argument("--tol", type=float, default=5e-3)
    parser.add_argument("--only", default="", help="comma-separated configuration names (default: all)")
    parser.add_argument("--json", type=Path, help="also write every shape's rows (name, ms, error, share) here")
    args = parser.parse_args()
    import torch
    import triton

    if not torch.cuda.is_available():
        raise SystemExit("a GPU is needed")
    sys.path.insert(0, str(ROOT))
    from aka_tui.bench.problem.module_loading import import_file

    kernel = import_file(ROOT / "kb/family/gemm/gemm_fp8_blockscale.py", "fp8_probe")
    chosen = [c for c in CONFIGS if not args.only or c in args.only.split(",")]
    table: dict[str, list[dict[str, object]]] = {}
    for text in args.shapes:
        m, n, k = (int(x) for x in text.lower().split("x"))
        torch.manual_seed(0)
        a, sa, b, sb = quantised(m, n, k)
        want = exact(a, sa, b, sb)
        rows = []
        for name in chosen:
            cfg = dict(kernel.TUNABLES, **CONFIGS[name])
            try:
                got = kernel.launch_gemm_fp8_blockscale(a, sa, b, sb, torch.float32, GROUP, cfg).double()
            except Exception as exc:  # a configuration that does not compile here is a row, not the end
                rows.append((float("inf"), name, float("nan"), float("nan"), f"{type(exc).__name__}: {exc}"[:80]))
                continue
            diff = (got - want).abs()
            bad = (diff > args.tol + args.tol * want.abs()).double().mean().item()
            err = diff.max().item()
            del got, diff
            def call(a=a, sa=sa, b=b, sb=sb, cfg=cfg):
                return kernel.launch_gemm_fp8_blockscale(a, sa, b, sb, torch.float32, GROUP, cfg)

            ms = triton.testing.do_bench(call, rep=100)
            rows.append((ms, name, err, bad, ""))
        rows.sort(key=lambda r: r[0])
        table[text] = [{"name": name, "ms": ms, "max_err": err, "outside": bad, "note": note}
                       for ms, name, err, bad, note in rows]
        if args.json:
            args.json.write_text(json.dumps(table, indent=1))
        print(f"\n### {text} (|exact| mean {want.abs().mean().item():.2f})\n")
        print(f"| configuration | ms | TFLOP/s | max abs error | share outside {args.tol:g} | note |")
        print("|---|---|---|---|---|---|")
        for ms, name, err, bad, note in rows:
            print(f"| {name} | {ms:.4f} | {2 * m * n * k / ms / 1e9:.0f} | {err:.3g} | {bad:.2e} | {note} |")
        del a, sa, b, sb, want
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
