"""What one evaluation costs on the CPU before any shape runs: the worker's start (spawn, imports, the harness's
warm-up, the candidate's import, until it reports the candidate compiled) and the whole evaluation, for the eager
baseline and a Triton kernel on rms_norm's smoke shapes, over ROUNDS interleaved rounds.

Usage: TRITON_INTERPRET=1 PYTHONPATH=. python3 scripts/worker_start_cost.py [ROUNDS]"""
import statistics
import sys
import time
from pathlib import Path

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.problem.lookup import load_problem

problem = load_problem(Path("problems/rms_norm"))
specs = {"eager": CandidateSpec("eager"),
         "triton_rms_norm": CandidateSpec.file(Path("problems/rms_norm/solutions/correct/triton_rms_norm.py"))}
options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=0)
rows = {}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    for name, spec in specs.items():
        t = time.perf_counter()
        r = evaluate_candidate(problem, spec, options)
        wall = time.perf_counter() - t
        sec = r.provenance["checks"]["seconds"]
        rows.setdefault(name, []).append((sec.get("worker_startup"), wall))
for name, vals in rows.items():
    su = [v[0] for v in vals if v[0] is not None]
    wl = [v[1] for v in vals]
    print(f"{name}: worker start median {statistics.median(su):.2f} s (min {min(su):.2f}), "
          f"evaluation median {statistics.median(wl):.2f} s (min {min(wl):.2f}), n={len(wl)}")
