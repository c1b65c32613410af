"""What the library comparison's harness adds to a call's host time (a CUDA GPU): one KB candidate timed three
ways in interleaved rounds on the evaluator's case inputs, each reporting the host time inside one call (the
first, host-bound pass; `host_call_ms`) and its device time.

  ours            our side of `aka bench libraries`: the engine's checked timing (`_ours_side`)
  plain           the same Model called as a library side was before 2026-12-04: `time_cuda` on a bare call
  library-framed  the same Model called as a library side is now (`shape._timer`: the engine's call loop and a
                  launch recorder, its bookkeeping subtracted)

The same implementation should read the same host time as ours and as a library; a difference is harness.

    PYTHONPATH=. python3 scripts/library_frames_device.py [OP [SHAPE ...]] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", nargs="?", default="silu_and_mul")
    parser.add_argument("shapes", nargs="*")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch

    from aka_tui.bench.compare.library.plans import Context
    from aka_tui.bench.compare.library.shape import _ours_side, _timer
    from aka_tui.bench.measure.cases import ShapeCases, case_seeds
    from aka_tui.bench.measure.session import build_candidate_model
    from aka_tui.bench.measure.timing import Timers, time_cuda
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file
    from aka_tui.bench.scoring.bench_report import find_candidate

    problem = load_problem(ROOT / "problems" / args.op)
    ref_module = import_file(problem.reference_path, "frames_ref")
    input_module = import_file(problem.input_path, "frames_inp")
    cand_cls = import_file(find_candidate(ROOT / "kb/family", problem), "frames_cand").Model
    ctx = Context(problem, ref_module, input_module, "cuda", {})
    timers = Timers.capture()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    shapes = args.shapes or [s for s, v in problem.shapes.items() if v.tier == "full"]
    for shape_id in shapes:
        shape = problem.shapes[shape_id]
        cases = ShapeCases(problem, shape, "cuda", ref_module, input_module, case_seeds(problem, shape, 1), False,
                           0, 1)
        n_sets = cases.timing_sets(3, memory_fraction=0.125)
        ours, time_ours = _ours_side(ctx, cases, shape, cand_cls, "kb", 0.0, timers, l2, n_sets)
        if not ours.ok:
            print(f"{shape_id}: our side failed its check: {ours.check}")
            continue
        model = build_candidate_model(cand_cls, shape, cases.ref_model, "cuda")
        sets = [cases.case(i).inputs for i in range(n_sets)]
        framed = _timer("cuda", timers, l2)
        ways = {
            "ours": time_ours,
            "plain": lambda: time_cuda(lambda p: model(**p), sets, timers, l2),
            "library-framed": lambda: framed(lambda p: model(**p), sets),
        }
        host: dict[str, list[float]] = {w: [] for w in ways}
        device: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(args.rounds):
            for name, way in ways.items():
                stats = way()
                host[name].append((stats.host_call_ms or 0.0) * 1e3)
                device[name].append(stats.median_ms * 1e3)
        print(f"### {args.op} {shape_id}: medians of {args.rounds} interleaved rounds")
        print("| timed as | host µs inside a call | device µs |")
        print("|---|---|---|")
        for name in ways:
            print(f"| {name} | {statistics.median(host[name]):.1f} | {statistics.median(device[name]):.2f} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
