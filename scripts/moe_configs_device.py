"""Time the fused-MoE-experts KB kernel over a grid of its tiles on shapes given on the command line (a GPU):
the sweep behind its decode (SMALL_*) and prefill tile choices.

A shape is a name from problems/moe_fused_experts/shapes.json or `TxHxIxExK` (tokens, hidden, intermediate,
experts, top-k; bf16), e.g. `64x7168x256x256x8`. Inputs come from the problem's own input.py (uneven
routing). Prints one Markdown table per shape: each configuration's time (`triton.testing.do_bench`, median,
device time, L2 flushed; the median of shuffled rounds, scripts/sweep_timing.py), the TFLOP/s of the routed
pairs and the bandwidth of the distinct experts' weights (read once), fastest first; the row "default" is the
launcher at its TUNABLES (its own regime choice included); the grid's rows give every tile explicitly, with no
regime switch. Outputs are compared with the default's.

    PYTHONPATH=. python3 scripts/moe_configs_device.py deepseek_v3_tp8_decode_t64 --grid BLOCK_M=16,32

The padding-aware row tiles (HALF_M_GAIN) are a launcher rule, so they go in the grid like a tile:
`--grid HALF_M_GAIN=0,10,25` beside single values for the other grid keys times each gain at the given tiles.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from sweep_timing import add_sweep_options, grid_with, median_times, not_launched, warm

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems/moe_fused_experts"
DECODE_GRID = {"BLOCK_M": [16, 32], "BLOCK_N": [32, 64, 128], "BLOCK_K": [128, 256],
               "DOWN_BLOCK_N": [64, 128, 256], "DOWN_BLOCK_K": [128, 256], "num_warps": [4], "num_stages": [3, 4]}
PREFILL_GRID = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [64, 128], "DOWN_BLOCK_N": [128, 256],
                "DOWN_BLOCK_K": [64, 128], "num_warps": [4, 8], "num_stages": [3, 4]}


def parse_shape(text: str) -> dict:
    shapes = json.loads((PROBLEM / "shapes.json").read_text())
    if text in shapes:
        return dict(shapes[text]["input_kwargs"])
    try:
        t, h, i, e, k = (int(x) for x in text.split("x"))
    except ValueError:
        raise SystemExit(f"shape {text!r}: a name from {PROBLEM / 'shapes.json'} or TxHxIxExK") from None
    return {"num_tokens": t, "hidden_size": h, "intermediate_size": i, "num_experts": e, "top_k": k,
            "dtype": "bfloat16"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+")
    add_sweep_options(parser, rep=40, rounds=2)
    parser.add_argument("--top", type=int, default=12, help="rows printed per shape")
    parser.add_argument("--uniform", action="store_true",
                        help="uniform routing (each token's top-k distinct experts equally likely) instead of the "
                             "problem's uneven router: the padding HALF_M_GAIN estimates assumes it")
    parser.add_argument("--kernels", action="store_true",
                        help="only the default configuration: device time per kernel (torch.profiler) and the gaps")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    import triton

    from aka_tui.bench.problem.module_loading import import_file

    mod = import_file(ROOT / "kb/family/moe/moe_fused_experts.py", "moe_configs_kernel")
    make_inputs = import_file(PROBLEM / "input.py", "moe_configs_inputs")._make_inputs
    for text in args.shapes:
        kwargs = parse_shape(text)
        torch.manual_seed(0)
        inp = make_inputs(**kwargs, device="cuda")
        t, k, e = kwargs["num_tokens"], kwargs["top_k"], kwargs["num_experts"]
        if args.uniform:
            inp["topk_ids"] = torch.rand(t, e, device="cuda").argsort(dim=1)[:, :k].to(torch.int32).contiguous()
            inp["topk_weights"] = torch.softmax(torch.randn(t, k, device="cuda"), dim=-1)
        decode = mod.decode_regime(mod.TUNABLES, t * k, e)
        grid = grid_with(DECODE_GRID if decode else PREFILL_GRID, args.grid)
        keys = list(grid)

        def run(cfg: dict):
            return mod.launch_moe_fused_experts(inp["hidden"], inp["w1"], inp["w2"], inp["topk_weights"],
                                                inp["topk_ids"], cfg)

        if args.kernels:
            print_kernels(text, lambda: run(mod.TUNABLES))
            continue
        entries = {"default": lambda: run(mod.TUNABLES)}
        for values in itertools.product(*(grid[key] for key in keys)):
            cfg = {**mod.TUNABLES, "SMALL_MAX_PAIRS_PER_EXPERT": 0, **dict(zip(keys, values))}
            entries[" | ".join(str(v) for v in values)] = lambda cfg=cfg: run(cfg)
        outputs = warm(entries, not_launched)
        ref = outputs["default"].float()
        times = median_times(entries, lambda call: triton.testing.do_bench(call, rep=args.rep), args.rounds)
        rows = sorted((ms, label, (outputs[label].float() - ref).abs().max().item()) for label, ms in times.items())
        h, i = kwargs["hidden_size"], kwargs["intermediate_size"]
        flops = 2 * t * k * 3 * h * i
        experts = int(torch.unique(inp["topk_ids"]).numel())
        wbytes = experts * 3 * h * i * inp["w1"].element_size()
        regime = ("decode (SMALL_*)" if decode else "prefill") + (", uniform routing" if args.uniform else "")
        print(f"\n### {text}: T {t} H {h} I {i} E {e} top-{k}, {experts} experts routed, {regime} "
              f"(cuda, default {dict((key, mod.TUNABLES[key]) for key in keys)})\n")
        print("| " + " | ".join(keys) + " | µs | TFLOP/s | TB/s of weights | max abs diff vs default |")
        print("|" + "---|" * (len(keys) + 4))
        for ms, label, diff in rows[:args.top]:
            cells = label if " | " in label else " | ".join([label] + [""] * (len(keys) - 1))
            print(f"| {cells} | {ms * 1e3:.1f} | {flops / ms / 1e9:.0f} | {wbytes / ms / 1e9:.2f} | {diff:.2e} |")
    return 0


def print_kernels(text: str, call, calls: int = 20) -> None:
    """Each kernel's device time per call of the default configuration (torch.profiler), and a call's device
    span with the launch queue kept full (a GPU sleep ahead of it while the host enqueues): span minus the sum
    is what the kernels' boundaries cost on the device."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    per_kernel: dict[str, float] = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            per_kernel[e.name] = per_kernel.get(e.name, 0.0) + e.time_range.elapsed_us()
    spans = []
    for _ in range(calls):
        began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(5_000_000)  # ~ms of GPU time: the host enqueues the whole call meanwhile
        began.record()
        call()
        ended.record()
        torch.cuda.synchronize()
        spans.append(began.elapsed_time(ended) * 1e3)
    spans.sort()
    print(f"\n### {text}: device time per call, default configuration ({calls} calls)\n")
    print("| kernel | µs per call |")
    print("|---|---|")
    for name, us in sorted(per_kernel.items(), key=lambda kv: -kv[1]):
        print(f"| {name[:60]} | {us / calls:.1f} |")
    print(f"| sum of kernels | {sum(per_kernel.values()) / calls:.1f} |")
    print(f"| a call's device span, queue full (median) | {spans[len(spans) // 2]:.1f} |")

if __name__ == "__main__":
    sys.exit(main())
