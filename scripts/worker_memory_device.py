"""GPU memory across an evaluation worker's shapes: what each shape leaves behind.

Runs the evaluation worker in this process (as `aka eval` does in its own) on one problem, the eager baseline
or a candidate file, and prints per shape its status and the CUDA allocator's allocated / reserved GiB when
its result is reported (before the worker releases memory between shapes) and when the next shape starts.

    PYTHONPATH=. python3 scripts/worker_memory_device.py SUITE/PROBLEM [eager|CANDIDATE.py] [--shapes 0,1,2] [--no-release]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("candidate", nargs="?", default="eager")
    parser.add_argument("--shapes", help="comma-separated shape ids (default: every full-tier shape)")
    parser.add_argument("--no-release", action="store_true",
                        help="skip the worker's release of memory between shapes (to see what it changes)")
    args = parser.parse_args()

    import torch

    from aka_tui.bench.evaluator import worker
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, build_job
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.roofline.hardware import get_profile

    if args.no_release:
        worker.release_device_memory = lambda device: None  # type: ignore[assignment]
    if not torch.cuda.is_available():
        print("this probe needs a CUDA GPU")
        return 2
    problem = load_problem(args.problem)
    spec = CandidateSpec(args.candidate) if args.candidate in ("eager", "compile") else CandidateSpec.file(args.candidate)
    options = EvalOptions(device="cuda", tier="full", cases=1, input_sets=1, fuzz=0)
    ids = args.shapes.split(",") if args.shapes else [s.shape_id for s in problem.shapes_for("full")]
    job = build_job(problem, spec, options, "cuda", get_profile("h200"), ids, [])
    gib = 2 ** 30

    def emit(event: dict) -> None:
        kind = event["event"]
        if kind in ("shape_start", "shape_result", "done"):
            result = event.get("result") or {}
            error = (result.get("error") or {}).get("message", "")[:420]
            print(f"{kind:13s} {event.get('shape_id') or result.get('shape_id') or '':6s} "
                  f"allocated {torch.cuda.memory_allocated() / gib:6.1f} GiB  reserved "
                  f"{torch.cuda.memory_reserved() / gib:6.1f} GiB  {result.get('status', '')} {error}", flush=True)

    return worker.run(job.to_json(), emit)


if __name__ == "__main__":
    raise SystemExit(main())
