"""Compile the knowledge base's reference kernels for a GPU architecture on a machine without a GPU.

The CPU interpreter runs Triton code that the compiler rejects (a function whose constexpr branches return
tensors of different types, for one). This check closes that gap on a CPU-only machine, in one process for
every kernel (aka_tui/bench/evaluator/target_compile.py says how; `aka eval CANDIDATE --compile-for sm_90` is
the sandboxed form for any candidate). Each reference kernel's Model runs on its ops' smoke shapes with CPU
tensors, and every launch configuration its launcher picks goes through Triton's whole pipeline (TTIR, TTGIR,
LLVM, PTX, ptxas). Nothing runs on a device.

Prints one line per (kernel, op): the kernels compiled and their PTX sizes, or the first line of the error.
Exits 1 if any failed. Run it without TRITON_INTERPRET. It imports our own kernels, which are trusted code;
it is not a sandbox for candidates.

    PYTHONPATH=. python3 scripts/kb_compile_check.py [--arch 90] [--ops rms_norm,…] [--all-shapes]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability as one number (90: Hopper)")
    parser.add_argument("--ops", help="comma-separated ops (default: every op of a reference kernel in problems/)")
    parser.add_argument("--all-shapes", action="store_true", help="every smoke shape (default: the first)")
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET"):
        raise SystemExit("kb_compile_check: unset TRITON_INTERPRET (the interpreter compiles nothing)")
    sys.path.insert(0, str(ROOT))
    from aka_tui.bench.evaluator.target_compile import run_in_process
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.knowledge.reference_kernels import reference_kernels
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    wanted = set(args.ops.split(",")) if args.ops else None
    failed = 0
    for kernel in reference_kernels(load_kb(default_kb_dir())):
        for op in kernel.ops:
            problem_dir = ROOT / "problems" / op
            if not problem_dir.is_dir() or (wanted is not None and op not in wanted):
                continue
            shape_ids = ([s.shape_id for s in load_problem(problem_dir).shapes_for("smoke")] if args.all_shapes
                         else None)  # None: the first smoke shape
            result, _ = run_in_process(problem_dir, kernel.path, args.arch, shape_ids)
            if not result.ok:
                failed += 1
                print(f"FAIL {kernel.path.name} on {op}: {result.error}")
                continue
            kernels = ", ".join(f"{name} ({lines} PTX lines)" for name, lines in result.kernels) or "no Triton launch"
            print(f"ok   {kernel.path.name} on {op}: {kernels}")
    import triton

    print(f"sm_{args.arch} (Triton {triton.__version__}): {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
