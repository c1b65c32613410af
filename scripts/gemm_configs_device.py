"""Time the bf16 linear-epilogue GEMM KB kernel over a grid of its tunables on shapes given on the command line
(a GPU): the sweep behind a shape-dependent tile choice such as the small-M (decode) one.

A shape is `MxNxK[:ACT]` with ACT none, silu or gelu_tanh (default none), e.g. `64x6144x4096` or
`256x7168x8192:silu`. Prints one Markdown table per shape: each configuration's time
(`triton.testing.do_bench`, median, device time; the median of shuffled rounds, scripts/sweep_timing.py), TFLOP/s and the weight bandwidth it implies (w read once),
fastest first; the row "default" is the launcher at its TUNABLES (its own shape-dependent choices included; the grid's rows turn
those off and give every tile explicitly),
"F.linear" is cuBLAS with the epilogue in torch, for context. Outputs are compared with the default's.

    PYTHONPATH=. python3 scripts/gemm_configs_device.py 64x6144x4096 256x7168x8192:silu --grid SPLIT_K=1,2,4
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from sweep_timing import add_sweep_options, grid_with, median_times, not_launched, warm

ROOT = Path(__file__).resolve().parents[1]
GRID = {"BLOCK_M": [64], "BLOCK_N": [64, 128], "BLOCK_K": [128, 256], "SPLIT_K": [1, 2, 4], "num_warps": [4],
        "num_stages": [3, 4]}


def parse_shape(text: str) -> tuple[int, int, int, str]:
    try:
        dims, _, act = text.partition(":")
        m, n, k = (int(x) for x in dims.split("x"))
        return m, n, k, act or "none"
    except ValueError:
        raise SystemExit(f"shape {text!r}: write MxNxK[:none|silu|gelu_tanh]") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16",
                        help="operand dtype (float32: the IEEE fp32 path; --grid FP32_TF32X3=0,1 compares it with "
                             "three TF32 products, the diff column showing their distance from the default)")
    add_sweep_options(parser, rep=40, rounds=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    import torch.nn.functional as F
    import triton

    from aka_tui.bench.problem.module_loading import import_file

    mod = import_file(ROOT / "kb/family/gemm/gemm_bf16_linear_epilogue.py", "gemm_configs_kernel")
    grid = grid_with(GRID, args.grid)
    keys = list(grid)
    for text in args.shapes:
        m, n, k, act = parse_shape(text)
        gen = torch.Generator(device="cuda").manual_seed(0)
        dtype = getattr(torch, args.dtype)
        x = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
        w = torch.randn(n, k, device="cuda", dtype=dtype, generator=gen) / k ** 0.5

        def torch_path():
            y = F.linear(x, w)
            return F.silu(y) if act == "silu" else F.gelu(y, approximate="tanh") if act == "gelu_tanh" else y

        entries = {"default": lambda: mod.launch_gemm_bf16_linear_epilogue(x, w, None, None, act),
                   "F.linear": torch_path}
        for values in itertools.product(*(grid[key] for key in keys)):
            cfg = {**mod.TUNABLES, "LARGE_M_MIN": 0, "SMALL_M_MAX": 0, "MID_M_MAX": 0, "UNDER_WAVE_BLOCK_M": 0,
                   **dict(zip(keys, values))}
            entries[" | ".join(str(v) for v in values)] = (
                lambda cfg=cfg: mod.launch_gemm_bf16_linear_epilogue(x, w, None, None, act, cfg))
        outputs = warm(entries, not_launched)
        ref = outputs["default"]
        times = median_times(entries, lambda call: triton.testing.do_bench(call, rep=args.rep), args.rounds)
        rows = sorted((ms, label, (outputs[label] - ref).abs().max().item()) for label, ms in times.items())
        flops, wbytes = 2 * m * n * k, n * k * x.element_size()
        print(f"\n### {text} (cuda, default {dict((key, mod.TUNABLES[key]) for key in keys)})\n")
        print("| " + " | ".join(keys) + " | µs | TFLOP/s | TB/s of w | max abs diff vs default |")
        print("|" + "---|" * (len(keys) + 4))
        for ms, label, diff in rows[:12]:
            cells = label if " | " in label else " | ".join([label] + [""] * (len(keys) - 1))
            print(f"| {cells} | {ms * 1e3:.1f} | {flops / ms / 1e9:.0f} | {wbytes / ms / 1e9:.2f} | {diff:.2e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
