"""Time the varlen attention KB kernel over a grid of its tunables on workload shapes given on the command line
(a GPU; `--check-only` runs every configuration once and compares outputs, on the CPU interpreter too).

A shape is `SEQSxLEN:HEADS/KV_HEADS:HEAD_DIM[:paged16]` — e.g. `3000x256:16/4:128:paged16` is 3000 causal
sequences of 256 tokens, 16 query heads over 4 KV heads, head size 128, keys in a paged cache of 16-slot blocks.
Prints one Markdown table per shape: each configuration's time (`triton.testing.do_bench`, median), TFLOP/s
(causal FLOPs) and the bandwidth its minimum traffic implies (q, k, v and out once), fastest first; the row
"auto" is the launcher's own pick (the kernel's AUTO tunable).

    PYTHONPATH=. python3 scripts/varlen_configs_device.py 3000x256:16/4:128:paged16 1x8192:32/8:128
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64], "num_warps": [4, 8], "num_stages": [2, 3],
        "TILE_MAP": [0, 1], "PACK_GQA": [0, 1], "KV_AHEAD": [0],
        "MAXNREG": [0], "TMA": [1], "TMA_TAIL": [0]}


def parse_shape(text: str) -> dict[str, int | bool]:
    try:
        parts = text.split(":")
        seqs, length = (int(x) for x in parts[0].split("x"))
        heads, kv_heads = (int(x) for x in parts[1].split("/"))
        paged = parts[3] if len(parts) > 3 else ""
        return {"seqs": seqs, "len": length, "heads": heads, "kv_heads": kv_heads, "dim": int(parts[2]),
                "page": int(paged.removeprefix("paged")) if paged else 0}
    except (ValueError, IndexError):
        raise SystemExit(f"shape {text!r}: write SEQSxLEN:HEADS/KV_HEADS:HEAD_DIM[:pagedN]") from None


def inputs(shape: dict[str, int | bool], device: str) -> tuple[tuple, dict]:
    import torch as t

    seqs, length, heads, kv_heads, dim, page = (int(shape[k]) for k in ("seqs", "len", "heads", "kv_heads", "dim",
                                                                        "page"))
    dtype = t.bfloat16 if device != "cpu" else t.float32
    tokens = seqs * length
    q = t.randn(tokens, heads, dim, device=device, dtype=dtype)
    cu = t.arange(0, tokens + 1, length, device=device, dtype=t.int32)
    if not page:
        k, v = t.randn(tokens, kv_heads, dim, device=device, dtype=dtype), t.randn(tokens, kv_heads, dim,
                                                                                    device=device, dtype=dtype)
        return (q, k, v, cu), {}
    per_seq = -(-length // page)
    blocks = seqs * per_seq
    k = t.randn(blocks, page, kv_heads, dim, device=device, dtype=dtype)
    v = t.randn(blocks, page, kv_heads, dim, device=device, dtype=dtype)
    table = t.randperm(blocks, device=device).view(seqs, per_seq).to(t.int32)
    used = t.full((seqs,), length, device=device, dtype=t.int32)
    return (q, k, v, cu), {"seqused_k": used, "block_table": table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--check-only", action="store_true", help="run each configuration once, compare outputs")
    parser.add_argument("--rep", type=int, default=200, help="do_bench repetition time in ms")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help="replace one tunable's values in the grid (repeatable), e.g. --grid TILE_MAP=0")
    parser.add_argument("--auto-also", action="append", default=[], metavar="KEY=V",
                        help="time the launcher's own pick once more with this tunable set (repeatable rows)")
    args = parser.parse_args()
    for item in args.grid:
        key, _, values = item.partition("=")
        if key not in GRID or not values:
            raise SystemExit(f"--grid {item!r}: write KEY=V1,V2 with KEY one of {', '.join(GRID)}")
        GRID[key] = [int(v) for v in values.split(",")]
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.check_only:
        raise SystemExit("timing needs a GPU; on the CPU use --check-only (with TRITON_INTERPRET=1)")
    sys.path.insert(0, str(ROOT))
    from aka_tui.bench.problem.module_loading import import_file

    kernel = import_file(ROOT / "kb/family/attention/attention_prefill_varlen.py", "varlen_configs")
    defaults = dict(kernel.TUNABLES)
    configs = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]
    for text in args.shapes:
        shape = parse_shape(text)
        torch.manual_seed(0)
        positional, extra = inputs(shape, device)
        heads, kv_heads, dim = int(shape["heads"]), int(shape["kv_heads"]), int(shape["dim"])
        model = kernel.Model(heads, kv_heads, dim, causal=True)
        kernel.TUNABLES.clear()
        kernel.TUNABLES.update(defaults)
        want = model(*positional, **extra).float()
        tokens, length = int(shape["seqs"]) * int(shape["len"]), int(shape["len"])
        flops = 4 * tokens * heads * dim * (length + 1) / 2
        size = positional[0].element_size()
        min_bytes = size * tokens * dim * (2 * heads + 2 * kv_heads)
        rows = []
        autos = [{"AUTO": 1}] + [{"AUTO": 1, item.partition("=")[0]: int(item.partition("=")[2])}
                                 for item in args.auto_also]
        for config in configs + autos:  # the grid's explicit tiles, then the launcher's own pick
            kernel.TUNABLES.clear()
            kernel.TUNABLES.update({**defaults, "AUTO": 0, **config})
            got = model(*positional, **extra).float()
            err = (got - want).abs().max().item()
            ms = float("nan")
            if not args.check_only:
                import triton
                ms = triton.testing.do_bench(lambda: model(*positional, **extra), warmup=25, rep=args.rep)
            rows.append((ms, config, err))
        rows.sort(key=lambda r: r[0])
        print(f"\n### {text} ({device}, default {defaults})\n")
        print("| " + " | ".join(GRID) + " | ms | TFLOP/s | GB/s of the minimum traffic | max abs diff vs default |")
        print("|" + "---|" * (len(GRID) + 4))
        for ms, config, err in rows:
            print("| " + " | ".join(str(config.get(k, "auto")) for k in GRID)
                  + ("" if not config.get("AUTO") else " (auto" + "".join(f", {k}={v}" for k, v in config.items()
                                                                    if k != "AUTO") + ")")
                  + f" | {ms:.4f} | {flops / ms / 1e9:.0f} | {min_bytes / ms / 1e6:.0f} | {err:.2e} |")
        worst = max(err for _, _, err in rows)
        if worst > (1e-4 if device == "cpu" else 2e-2):
            print(f"outputs differ between configurations: max {worst:.2e}")
            return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
