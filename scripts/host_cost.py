"""Host time per call of candidate files: what their Python path (adapter, launcher, Triton's launch) costs
before the GPU sees any work — the part a serving loop without CUDA graphs pays on every call.

    PYTHONPATH=. python3 scripts/host_cost.py PROBLEM_DIR CANDIDATE.py [CANDIDATE.py …] [--shape ID]
    PYTHONPATH=. python3 scripts/host_cost.py PROBLEM_DIR A.py B.py --stub-launch     # a machine without a GPU

On a GPU: N calls issued back to back (the wall time until the last call returns, divided by N: the host's
issue rate while the GPU queue is not full) and the device time per call after a synchronise. With
`--stub-launch` (no GPU needed), Triton's kernel launch returns at once: only the Python around it is timed.
The candidates are timed interleaved, round after round, and the median of rounds is printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("candidates", type=Path, nargs="+")
    parser.add_argument("--shape", help="shape id (default: the smallest, where the host cost matters most)")
    parser.add_argument("--stub-launch", action="store_true", help="Triton launches return at once (no GPU)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print each candidate's N most expensive functions (cProfile, own time)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch

    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file

    problem = load_problem(args.problem)
    if args.shape:
        shape = problem.shapes[args.shape]
    else:
        shape = min(problem.shapes.values(),
                    key=lambda s: sum(v for v in s.input_kwargs.values() if isinstance(v, int)))
    device = "cpu" if args.stub_launch or not torch.cuda.is_available() else "cuda"
    if device == "cpu" and not args.stub_launch:
        raise SystemExit("no GPU here: pass --stub-launch to time the Python path alone")
    if args.stub_launch:
        from triton.runtime.jit import JITFunction

        JITFunction.run = lambda self, *a, **k: None  # type: ignore[method-assign]
    inputs = make_inputs(problem, import_file(problem.input_path, "host_cost_inputs"), shape, device, 0)
    models = {f"{c.parent.name}/{c.name}": import_file(c, f"host_cost_{i}").Model(**shape.init_kwargs) for i, c in
              enumerate(args.candidates)}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for model in models.values():
        for _ in range(50):
            model(**inputs)
    sync()
    host: dict[str, list[float]] = {name: [] for name in models}
    device_us: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            began = time.perf_counter()
            for _ in range(args.calls):
                model(**inputs)
            issued = time.perf_counter()
            sync()
            host[name].append((issued - began) / args.calls * 1e6)
            device_us[name].append((time.perf_counter() - began) / args.calls * 1e6)
    print(f"{problem.name} shape {shape.shape_id} on {device}" + (" (launches stubbed)" if args.stub_launch else ""))
    print("| candidate | host µs per call (median of rounds) | min | wall µs per call incl. the GPU |")
    print("|---|---|---|---|")
    for name in models:
        print(f"| {name} | {statistics.median(host[name]):.1f} | {min(host[name]):.1f} | "
              f"{statistics.median(device_us[name]):.1f} |")
    for name, model in models.items() if args.profile else ():
        print_profile(name, lambda: model(**inputs), args.calls, args.profile)
        sync()
    return 0


def print_profile(name: str, call, calls: int, top: int) -> None:
    """The functions where `calls` calls spend their own time (µs per call), most expensive first."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = sorted(((tt, nc, f"{Path(fn).name}:{line} {func}") for (fn, line, func), (_, nc, tt, _, _)
                   in stats.items()), reverse=True)[:top]
    print(f"\n{name}: own time per call under cProfile (its overhead included)")
    print("| function | µs per call | calls per call |")
    print("|---|---|---|")
    for tt, nc, label in rows:
        print(f"| {label} | {tt / calls * 1e6:.2f} | {nc / calls:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
