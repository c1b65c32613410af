"""Time a KB kernel on each of the evaluator's timing input sets separately, to find input-dependent slow cases.

The evaluator rotates 3 input sets and reports the median over all calls, so a kernel that is slow on one set
shows only as a wide p20-p80 spread. This measures each set alone through the evaluator's engine (its checked
case, its timing protocol with the timed calls verified) and, with --rows, times each row of the slowest set
alone with the engine's timer (for ops whose inputs all share a leading batch dimension; a row is no problem
shape, so nothing checks it), printing the slowest rows with their small per-row inputs.

    PYTHONPATH=. python3 scripts/input_set_times.py OP SHAPE_ID [--rows] [--sets 3] [--set NAME=INT] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder
from aka_tui.bench.measure.calls import run_calls
from aka_tui.bench.measure.cases import ShapeCases, case_seeds
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.session import build_candidate_model
from aka_tui.bench.measure.timing import Timers, time_cuda
from aka_tui.bench.problem.lookup import find_problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.roofline.hardware import detect_profile
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.tuning.runner import resolve_kernel


def _row(inputs: dict, r: int) -> dict:
    return {k: (v[r:r + 1].contiguous() if isinstance(v, torch.Tensor) and v.dim() > 0 else v)
            for k, v in inputs.items()}


def _small(inputs: dict) -> dict:
    """The per-row inputs small enough to print (one or two values per row), plus each big input's max."""
    out = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor):
            out[k] = v.flatten().tolist() if v.numel() <= 2 else f"max {float(v.float().max()):.4g}"
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("op")
    ap.add_argument("shape")
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--rows", action="store_true", help="time each row of the slowest set alone")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override one of the kernel's TUNABLES (an int) before timing")
    args = ap.parse_args(argv)
    timers = Timers.capture()
    l2 = detect_profile("cuda").l2_bytes
    problem = find_problem(args.op)
    shape = problem.shapes[args.shape]
    module = import_file(resolve_kernel(problem, load_kb(default_kb_dir())).path, "input_set_times")
    for item in args.set:
        name, _, value = item.partition("=")
        if name not in module.TUNABLES:
            raise SystemExit(f"{args.op}: no tunable {name}")
        module.TUNABLES[name] = int(value)
    ref_module, input_module = import_file(problem.reference_path, "ref"), import_file(problem.input_path, "inputs")
    recorder = TritonLaunchRecorder()
    recorder.install()
    options = PlanOptions("cuda", audit=False, watch_threads=False, recheck=False, evidence=False, n_sets=1,
                          l2_bytes=l2)
    result: dict = {"op": args.op, "shape": args.shape, "sets": []}
    sets = []
    for i, seed in enumerate(case_seeds(problem, shape, args.sets)):
        cases = ShapeCases(problem, shape, "cuda", ref_module, input_module, [seed], False, 0, i)
        model = build_candidate_model(module.Model, shape, cases.ref_model, "cuda")
        run_calls(model, ShapePlan(problem, cases, options, timers, recorder).check_only(0))
        t = run_calls(model, ShapePlan(problem, cases, options, timers, recorder).timing_only())
        sets.append(cases.case(0).inputs)
        result["sets"].append({"set": i, "seed": seed, "median_ms": t.median_ms, "p20_ms": t.p20_ms,
                               "p80_ms": t.p80_ms})
        print(f"set {i}: median {t.median_ms * 1e3:.1f} us (p20 {t.p20_ms * 1e3:.1f}, p80 {t.p80_ms * 1e3:.1f}); "
              "checked, timed calls verified")
    with torch.no_grad():
        if args.rows:
            slow = max(range(len(sets)), key=lambda i: result["sets"][i]["median_ms"])
            batch = next(v for v in sets[slow].values() if isinstance(v, torch.Tensor)).shape[0]
            rows = []
            for r in range(batch):
                one = _row(sets[slow], r)
                t = time_cuda(lambda x: model(**x), [one], timers, l2, target_ms=20.0, min_reps=5, max_reps=20)
                rows.append({"row": r, "median_ms": t.median_ms, **_small(one)})
            rows.sort(key=lambda e: -e["median_ms"])
            result["rows_of_set"] = slow
            result["rows"] = rows
            print(f"slowest rows of set {slow} (each alone; the row median is {rows[len(rows) // 2]['median_ms'] * 1e3:.1f} us):")
            for e in rows[:args.top]:
                print(f"  row {e['row']}: {e['median_ms'] * 1e3:.1f} us " +
                      " ".join(f"{k}={v}" for k, v in e.items() if k not in ("row", "median_ms")))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
