"""Run one KB kernel on one full-tier shape a few times, for a profiler to attach to (Nsight Compute).

    PYTHONPATH=. python3 scripts/ncu_target.py OP SHAPE_ID [KERNEL_FILE] [--calls N]

The inputs are the evaluator's (first timing set); the kernel file defaults to the op's KB reference kernel.
Under Nsight Compute (`ncu` on the PATH, or /opt/nvidia/nsight-compute/*/ncu, /usr/local/cuda/bin/ncu), with the
clocks left alone and one launch of the kernel named by the regex after two warm-up launches:

    PYTHONPATH=. ncu --clock-control none -k regex:_attention_mla_decode_kernel --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \\
        --section WarpStateStats --section SchedulerStats \\
        python3 scripts/ncu_target.py attention_mla_decode dsv3_tp8_b64_ctx4096 > ncu.txt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from aka_tui.bench.problem.inputs import timing_input_sets
from aka_tui.bench.problem.lookup import find_problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.tuning.runner import resolve_kernel


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("op")
    ap.add_argument("shape")
    ap.add_argument("kernel_file", nargs="?")
    ap.add_argument("--calls", type=int, default=4)
    args = ap.parse_args(argv)
    problem = find_problem(args.op)
    shape = problem.shapes[args.shape]
    path = Path(args.kernel_file) if args.kernel_file else resolve_kernel(problem, load_kb(default_kb_dir())).path
    module = import_file(path, "ncu_target")
    inputs = timing_input_sets(problem, import_file(problem.input_path, "ncu_inputs"), shape, "cuda", 1)[0]
    model = module.Model(**shape.init_kwargs).cuda().eval()
    with torch.no_grad():
        for _ in range(args.calls):
            model(**inputs)
    torch.cuda.synchronize()
    print(f"{args.op} {args.shape}: {args.calls} calls of {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
