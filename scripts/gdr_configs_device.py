"""Time the gated delta rule KB kernel's token loop over a grid of its tunables on shapes given on the command
line (a GPU): the sweep behind the SEQ_BLOCK_V / SEQ_WARPS / PREFETCH / FUSED_REDUCE defaults.

A shape is `BxTxQHxVHxD`: batch, tokens per sequence, query/key heads, value heads, head dim (k_dim = v_dim),
e.g. `1x8192x16x32x128`. Inputs in bf16 (--dtype): q, k [B, T, QH, D], v [B, T, VH, D], gates from A_log (fp32),
a, dt_bias and b, and an fp32 state pool of 2B slots read at B shuffled state_indices (--packed: the B sequences
packed into one row by cu_seqlens). The launcher updates the pool in place (a scratch copy while timing; every
output is taken from a fresh copy of the same pool), so no copy kernel is timed.

Prints one Markdown table per shape: each configuration's time (`triton.testing.do_bench`, median, device
time), µs per token (time / T: the tokens of a sequence are serial) and the largest absolute differences of the
output and of the final state from the default's, fastest first. The row "default" is the launcher at the file's
TUNABLES; the grid row SEQ_BLOCK_V 32, SEQ_WARPS 8, PREFETCH 0, FUSED_REDUCE 0 is the loop as it was before
these tunables (the decode step's tile and warps, no pipelining, four reductions a token).

    PYTHONPATH=. python3 scripts/gdr_configs_device.py 1x8192x16x32x128 1x1024x16x32x128 --grid SEQ_WARPS=1,2,4
    ... --grid CHUNK=0,64 --grid CHUNK_WARPS=4,8 --grid CHUNK_TF32=0,1      # the chunked form against the loop
    TRITON_INTERPRET=1 PYTHONPATH=. python3 scripts/gdr_configs_device.py 2x3x1x2x32 --device cpu   # dry run
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "kb/family/linear_attention/linear_attn_gated_delta_decode.py"
GRID = {"SEQ_BLOCK_V": [8, 16, 32], "SEQ_WARPS": [1, 2, 4, 8], "PREFETCH": [0, 1], "FUSED_REDUCE": [0, 1],
        "CHUNK": [0], "CHUNK_V": [32], "CHUNK_WARPS": [4], "CHUNK_TF32": [1]}  # CHUNK 0: the token loop


def parse_shape(text: str) -> tuple[int, int, int, int, int]:
    try:
        batch, tokens, q_heads, heads, dim = (int(x) for x in text.split("x"))
    except ValueError:
        raise SystemExit(f"shape {text!r}: write BxTxQHxVHxD (batch, tokens, q heads, v heads, head dim)") from None
    if min(batch, tokens, q_heads, heads, dim) < 1 or heads % q_heads:
        raise SystemExit(f"shape {text!r}: sizes must be positive and v heads a multiple of q heads")
    return batch, tokens, q_heads, heads, dim


def parse_grid(items: list[str]) -> dict[str, list[int]]:
    grid = dict(GRID)
    for item in items:
        key, _, values = item.partition("=")
        if key not in GRID or not values:
            raise SystemExit(f"--grid {item!r}: write KEY=V1,V2 with KEY one of {', '.join(GRID)}")
        try:
            grid[key] = [int(v) for v in values.split(",")]
        except ValueError:
            raise SystemExit(f"--grid {item!r}: values must be integers") from None
    return grid


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("shapes", nargs="+", metavar="BxTxQHxVHxD")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help=f"replace one tunable's values in the grid (repeatable; keys {', '.join(GRID)})")
    parser.add_argument("--rep", type=int, default=100, help="do_bench milliseconds per configuration")
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    parser.add_argument("--packed", action="store_true", help="the sequences packed by cu_seqlens (varlen form)")
    parser.add_argument("--device", default="cuda",
                        help="cuda (default); cpu is a dry run under TRITON_INTERPRET=1, timed by the wall clock")
    args = parser.parse_args()
    grid = parse_grid(args.grid)
    shapes = [(text, parse_shape(text)) for text in args.shapes]
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported
    sys.path.insert(0, str(ROOT))
    import torch
    import triton

    from aka_tui.bench.problem.module_loading import import_file

    mod = import_file(KERNEL, "gdr_configs_kernel")
    defaults = dict(mod.TUNABLES)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    dev = args.device

    def bench(fn: Callable[[], Any]) -> float:
        """Milliseconds per call: do_bench's median on a GPU, the wall clock's mean of 3 on the CPU."""
        if dev != "cpu":
            return float(triton.testing.do_bench(fn, rep=args.rep))
        fn()
        start = time.perf_counter()
        for _ in range(3):
            fn()
        return (time.perf_counter() - start) / 3 * 1e3

    keys = list(grid)
    for text, (batch, tokens, q_heads, heads, dim) in shapes:
        gen = torch.Generator(device=dev).manual_seed(0)

        def rand(*shape: int, dt: torch.dtype = dtype, gen: torch.Generator = gen) -> torch.Tensor:
            return torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen).to(dt)

        rows_in = (1, batch * tokens) if args.packed else (batch, tokens)
        slots = 2 * batch
        inputs: dict[str, Any] = {
            "q": rand(*rows_in, q_heads, dim), "k": rand(*rows_in, q_heads, dim), "v": rand(*rows_in, heads, dim),
            "A_log": rand(heads, dt=torch.float32) * 0.5, "a": rand(*rows_in, heads), "dt_bias": rand(heads),
            "b": rand(*rows_in, heads),
            "state_indices": torch.randperm(slots, device=dev, generator=gen)[:batch].to(torch.int32),
            "cu_seqlens": (torch.arange(batch + 1, device=dev, dtype=torch.int32) * tokens) if args.packed else None,
        }
        pool = rand(slots, heads, dim, dim, dt=torch.float32) * 0.1
        scratch = pool.clone()

        def launch(state: torch.Tensor, inputs: dict[str, Any] = inputs) -> tuple[torch.Tensor, torch.Tensor]:
            return mod.launch_linear_attn_gated_delta_decode(state=state, **inputs)

        def measure(cfg: dict[str, Any]) -> tuple[float, torch.Tensor, torch.Tensor]:
            """(ms, out, final state) at the tunables `cfg`; the file's TUNABLES are restored afterwards."""
            mod.TUNABLES.update(cfg)
            try:
                out, final = launch(pool.clone())
                ms = bench(lambda: launch(scratch))
            finally:
                mod.TUNABLES.clear()
                mod.TUNABLES.update(defaults)
            return ms, out, final

        ms, ref_out, ref_final = measure(defaults)
        rows = [(ms, "default", 0.0, 0.0)]
        for values in itertools.product(*(grid[key] for key in keys)):
            try:
                ms, out, final = measure(dict(zip(keys, values)))
            except Exception as exc:  # a configuration that does not launch (resources) is reported, not fatal
                print(f"  {values}: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}")
                continue
            rows.append((ms, " | ".join(str(v) for v in values), (out.float() - ref_out.float()).abs().max().item(),
                         (final - ref_final).abs().max().item()))
        rows.sort(key=lambda row: row[0])
        form = "packed by cu_seqlens" if args.packed else "batched"
        print(f"\n### {text} ({dev}, {args.dtype}, {form}; default {dict((k, defaults[k]) for k in keys)})\n")
        print("| " + " | ".join(keys) + " | µs | µs per token | max abs diff out | max abs diff state |")
        print("|" + "---|" * (len(keys) + 4))
        for ms, label, d_out, d_state in rows:
            cells = label if " | " in label else " | ".join([label] + [""] * (len(keys) - 1))
            print(f"| {cells} | {ms * 1e3:.1f} | {ms * 1e3 / tokens:.3f} | {d_out:.2e} | {d_state:.2e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
