"""What torch.compile generates for a problem's reference at one shape, beside a KB kernel (a CUDA GPU).

Prints inductor's generated code (its Triton kernels and their candidate configurations), then each GPU
kernel that one call of the compiled reference and one call of the KB kernel launch, as the profiler's trace
records them: name, grid, block (threads), registers per thread, shared memory, duration. The launch geometry
shows which of inductor's configurations its autotuner picked.

    PYTHONPATH=. python3 scripts/inductor_code_device.py problems/rms_norm llama3_8b_decode_t256_h4096 \
        kb/family/norm/rms_norm.py [--mode max-autotune-no-cudagraphs] [--code-lines 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def kernel_launches(fn, torch) -> list[dict]:  # type: ignore[no-untyped-def]
    """The GPU kernels one call of fn launches (after a warm-up call), from a profiler trace."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        prof.export_chrome_trace(trace.name)
        events = json.loads(Path(trace.name).read_text()).get("traceEvents", [])
    rows = []
    for event in events:
        if event.get("cat") == "kernel":
            args = event.get("args", {})
            rows.append({"name": event.get("name", "")[:70], "grid": args.get("grid"), "block": args.get("block"),
                         "regs": args.get("registers per thread"), "smem": args.get("shared memory"),
                         "us": event.get("dur")})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("shape")
    parser.add_argument("kernel", type=Path)
    parser.add_argument("--mode", default=None, help="torch.compile mode (default: the default mode)")
    parser.add_argument("--code-lines", type=int, default=400, help="lines of generated code printed")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    from torch._inductor.utils import run_and_get_code

    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file

    problem = load_problem(args.problem)
    shape = problem.shapes[args.shape]
    reference = import_file(problem.reference_path, "inductor_code_ref")
    inputs = make_inputs(problem, import_file(problem.input_path, "inductor_code_inp"), shape, "cuda", 0)
    ours = import_file(args.kernel, "inductor_code_kernel").Model(**shape.init_kwargs)
    compiled = torch.compile(reference.Model(**shape.init_kwargs).cuda().eval(), mode=args.mode, dynamic=False)
    with torch.no_grad():
        _, codes = run_and_get_code(lambda: compiled(**inputs))
        for code in codes:
            print("\n".join(code.splitlines()[:args.code_lines]))
        for label, fn in (("torch.compile", lambda: compiled(**inputs)), ("ours", lambda: ours(**inputs))):
            print(f"\n## kernels of one call: {label}")
            for row in kernel_launches(fn, torch):
                print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
