"""Where one candidate's evaluation spends its time: the worker run in this process under cProfile, with the
timed-call verification on and off, for the shapes of one problem.

Prints, per mode, the wall seconds, the per-stage seconds the engine records (summed over shapes), and the
functions whose cumulative time differs most between the two modes. A development tool: the evaluator itself
always runs the worker in a process of its own.

    PYTHONPATH=. python3 scripts/engine_profile.py PROBLEM_DIR CANDIDATE.py [--shapes N] [--top K] [--out DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import secrets
import time
from pathlib import Path
from typing import Any

import torch

from aka_tui.bench.evaluator import worker
from aka_tui.bench.measure.attribution import DEFAULT_OWN_SHARE_THRESHOLD
from aka_tui.bench.measure.job import (
    DEFAULT_CASES,
    DEFAULT_CPU_REPS,
    DEFAULT_FP64_FLOP_LIMIT,
    DEFAULT_INPUT_SETS,
    CandidateRef,
    MeasureJob,
)
from aka_tui.bench.problem.lookup import load_problem


def _job(problem_dir: str, candidate: str, shape_ids: list[str], verify: bool, device: str) -> MeasureJob:
    l2 = 0
    if device.startswith("cuda"):
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))
    return MeasureJob(problem_dir=problem_dir, candidate=CandidateRef("file", candidate), shape_ids=shape_ids,
                      device=device, cases=DEFAULT_CASES, input_sets=DEFAULT_INPUT_SETS, timing=True, hardening=True,
                      verify_timed=verify, own_share_threshold=DEFAULT_OWN_SHARE_THRESHOLD, l2_bytes=l2,
                      fp64_flop_limit=DEFAULT_FP64_FLOP_LIMIT, cpu_reps=DEFAULT_CPU_REPS,
                      sample_seed=secrets.randbits(62))


def _run(job: MeasureJob) -> tuple[float, dict[str, float], list[str], pstats.Stats]:
    results: list[dict[str, Any]] = []

    def emit(message: dict[str, Any]) -> None:
        if message.get("event") == "shape_result":
            results.append(message["result"])

    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    launchers = [(cls, cls.run) for cls in (JITFunction, InterpretedFunction)]
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.enable()
    try:
        worker.run(job.to_json(), emit)
    finally:
        profiler.disable()
        for cls, run in launchers:  # each run installs its own launch recorder: undo it, or they would nest
            cls.run = run  # type: ignore[method-assign]
    wall = time.perf_counter() - began
    stages: dict[str, float] = {}
    statuses = []
    for result in results:
        statuses.append(f"{result['shape_id']}: {result['status']}")
        verification = result.get("verification") or {}
        for stage, seconds in (verification.get("seconds") or {}).items():
            stages[stage] = stages.get(stage, 0.0) + seconds
        for key in ("verify_timed_s", "hooks_s", "checkpoint_s"):
            if key in verification:
                stages[key] = stages.get(key, 0.0) + verification[key]
    return wall, stages, statuses, pstats.Stats(profiler)


def _cumulative(stats: pstats.Stats) -> dict[str, tuple[float, float, int]]:
    out = {}
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        out[f"{Path(file).name}:{line}({name})"] = (cumtime, tottime, calls)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--shapes", type=int, default=0, help="the first N shapes (0: all)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", default="", help="directory for the two .prof files and a JSON summary")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    shape_ids = list(problem.shapes)[: args.shapes or None]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    runs = {}
    # Unverified first: the first run also pays Triton's compile and the harness's warm-up.
    for verify in (False, True, False, True):
        runs[verify] = _run(_job(str(Path(args.problem).resolve()), str(Path(args.candidate).resolve()), shape_ids,
                                 verify, device))
    summary: dict[str, Any] = {}
    for verify, (wall, stages, statuses, stats) in runs.items():
        label = "verified" if verify else "unverified"
        summary[label] = {"wall_s": round(wall, 3), "stages_s": {k: round(v, 3) for k, v in stages.items()},
                          "statuses": statuses}
        print(f"{label}: {wall:.2f} s over {len(shape_ids)} shapes; stages "
              + ", ".join(f"{k} {v:.3f}" for k, v in stages.items()))
        if args.out:
            stats.dump_stats(str(Path(args.out) / f"{label}.prof"))
    on, off = _cumulative(runs[True][3]), _cumulative(runs[False][3])
    diffs = sorted(((on.get(k, (0, 0, 0))[0] - off.get(k, (0, 0, 0))[0], k) for k in set(on) | set(off)), reverse=True)
    print(f"\nlargest cumulative-time increases with the verification ({args.top}):")
    print("| function | cum s verified | cum s unverified | self s verified | calls verified |\n|---|---|---|---|---|")
    rows = []
    for _delta, key in diffs[: args.top]:
        a, b = on.get(key, (0.0, 0.0, 0)), off.get(key, (0.0, 0.0, 0))
        rows.append({"function": key, "cum_on": a[0], "cum_off": b[0], "self_on": a[1], "calls_on": a[2]})
        print(f"| {key} | {a[0]:.3f} | {b[0]:.3f} | {a[1]:.3f} | {a[2]} |")
    summary["top_increases"] = rows
    if args.out:
        (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
