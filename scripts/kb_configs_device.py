"""Time a KB kernel over a grid of its tunables on a problem's own shapes and inputs, beside torch.compile of the
reference (a GPU): the sweep behind a kernel's default tiles for the kernels whose launchers read TUNABLES at
call time (the norms, the activations, the quantisers, ...).

For each shape (default: every full-tier shape) prints one Markdown table, fastest first: each grid point's
device time (`triton.testing.do_bench`, median, L2 flushed; with --saturated the evaluator's GPU-saturated
timer; the median over shuffled rounds, since whichever configuration runs first on a cold GPU reads 10-18%
slow), the row "default" (the file as it is) and the rows "torch.compile" / "max-autotune" (the reference
compiled, dynamic=False; max-autotune without CUDA graphs), each output compared with the default's. A grid point sets those TUNABLES keys on the module before the call. The
kernel's configurations are timed in shuffled rounds (scripts/sweep_timing.py), the compiled peers one after the
other (each compiled afresh). With --copy-row a row "copy" times `dst.copy_(src)` moving the bytes the shape's
roofline counts (read + written) among the kernel's configurations: the ceiling a streaming kernel meets at that
size, measured in the same rounds.

    PYTHONPATH=. python3 scripts/kb_configs_device.py problems/silu_and_mul kb/family/activation/silu_and_mul.py \
        --grid BLOCK_N=1024,2048,4096 --grid num_warps=4,8 [--shapes a,b] [--no-max-autotune]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from math import nan
from pathlib import Path

from sweep_timing import add_sweep_options, grid_with, median_times, not_launched, warm

ROOT = Path(__file__).resolve().parents[1]


def first_tensor(out):
    """The first tensor of an output (a tensor, a tuple/list or a dict of them)."""
    if isinstance(out, dict):
        out = next(iter(out.values()))
    if isinstance(out, (tuple, list)):
        out = out[0]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("kernel", type=Path, help="a KB kernel file (its Model takes the problem's arguments)")
    parser.add_argument("--shapes", help="comma-separated shape ids (default: the full tier's)")
    parser.add_argument("--top", type=int, default=10, help="rows printed per shape")
    add_sweep_options(parser, rep=30, rounds=3)
    parser.add_argument("--no-max-autotune", action="store_true", help="leave the max-autotune row out")
    parser.add_argument("--no-compile", action="store_true",
                        help="leave both compiled rows out (references that loop in Python compile for minutes)")
    parser.add_argument("--copy-row", action="store_true",
                        help="add a row timing a device copy of the shape's roofline bytes (read + written)")
    parser.add_argument("--saturated", action="store_true",
                        help="time with the evaluator's GPU-saturated timer instead of do_bench (decode-sized shapes, "
                             "where do_bench's back-to-back calls are paced by the host's launch path)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    import triton

    from aka_tui.bench.measure.timing import Timers, time_cuda
    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file
    from aka_tui.bench.roofline.hardware import detect_profile

    timers = Timers.capture()
    l2_bytes = detect_profile("cuda").l2_bytes if args.saturated else 0

    grid = grid_with({}, args.grid)
    problem = load_problem(args.problem)
    mod = import_file(args.kernel, "kb_configs_kernel")
    reference = import_file(problem.reference_path, "kb_configs_ref")
    inputs_module = import_file(problem.input_path, "kb_configs_inp")
    unknown = sorted(set(grid) - set(mod.TUNABLES))
    if unknown:
        raise SystemExit(f"{args.kernel}: no tunable {', '.join(unknown)} (it has {', '.join(mod.TUNABLES)})")
    defaults = dict(mod.TUNABLES)
    ids = args.shapes.split(",") if args.shapes else [s.shape_id for s in problem.shapes_for("full")]
    keys = list(grid)
    for shape_id in ids:
        shape = problem.shapes[shape_id]
        inputs = make_inputs(problem, inputs_module, shape, "cuda", 0)
        model = mod.Model(**shape.init_kwargs)
        ref_model = reference.Model(**shape.init_kwargs).cuda().eval()

        def ours(cfg: dict):
            def call():
                mod.TUNABLES.clear()
                mod.TUNABLES.update(cfg)
                return model(**inputs)
            return call

        entries = {"default": ours(defaults)}
        if args.copy_row:
            half = int(problem.roofline[shape_id].bytes_total) // 2
            src, dst = (torch.empty(half, dtype=torch.uint8, device="cuda") for _ in range(2))
            entries["copy"] = lambda src=src, dst=dst: dst.copy_(src)
        for values in itertools.product(*(grid[key] for key in keys)):
            entries[" | ".join(str(v) for v in values)] = ours({**defaults, **dict(zip(keys, values))})

        def bench(call) -> float:
            if args.saturated:
                return time_cuda(lambda _inputs: call(), [{}], timers, l2_bytes).median_ms
            return triton.testing.do_bench(call, rep=args.rep)

        with torch.no_grad():
            outputs = warm(entries, not_launched)
            base = first_tensor(outputs["default"]).float()
            times = median_times(entries, bench, args.rounds)
            # the peers one after the other, each compiled afresh (dynamo's caches dropped) and timed in its turn
            peers = [] if args.no_compile else [("torch.compile", None)] + (
                [] if args.no_max_autotune else [("max-autotune", "max-autotune-no-cudagraphs")])
            for label, mode in peers:
                torch._dynamo.reset()
                compiled = torch.compile(ref_model, mode=mode, dynamic=False)
                peer = {label: (lambda c=compiled: c(**inputs))}
                outputs.update(warm(peer, not_launched))
                times.update(median_times(peer, bench, args.rounds))
            diffs = {label: (first_tensor(out).float() - base).abs().max().item() if label != "copy" else nan
                     for label, out in outputs.items()}
        mod.TUNABLES.clear()
        mod.TUNABLES.update(defaults)
        rows = sorted((ms, label, diffs[label]) for label, ms in times.items())
        fastest_peer = min([ms for ms, label, _ in rows if label in ("torch.compile", "max-autotune")] or [nan])
        print(f"\n### {problem.name} {shape_id} (cuda, default {dict((k, defaults[k]) for k in keys)}; "
              f"median of {args.rounds} shuffled rounds)\n")
        print("| " + " | ".join(keys or ["config"]) + " | µs | fastest compile / this | max abs diff vs default |")
        print("|" + "---|" * (max(len(keys), 1) + 3))
        for ms, label, diff in rows[:args.top]:
            cells = label if " | " in label else " | ".join([label] + [""] * (max(len(keys), 1) - 1))
            print(f"| {cells} | {ms * 1e3:.2f} | {fastest_peer / ms:.3f} | {diff:.2e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
