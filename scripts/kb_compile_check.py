"""Compile the knowledge base's reference kernels for a GPU architecture on a machine without a GPU.

The CPU interpreter runs Triton code that the compiler rejects (a function whose constexpr branches return
tensors of different types, for one). This check closes that gap on a CPU-only machine.
- Triton's NVIDIA backend is given a stand-in driver that reports the target (sm_90 by default).
- Every kernel launch is turned into a compile-only warm-up.
- Each reference kernel's Model then runs on its ops' smoke shapes, with CPU tensors.
- So every launch configuration the launcher picks for those shapes goes through Triton's full pipeline
  (TTIR, TTGIR, LLVM, PTX, ptxas). Nothing runs on a device.

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


class _TargetDriver:
    """The part of Triton's driver interface that compiling (not launching) needs, for one architecture."""

    def __init__(self, arch: int) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self):  # type: ignore[no-untyped-def]
        return self.target


def _compile_only(compiled: list[tuple[str, int]]) -> None:
    """Kernel launches compile (warm-up) and record (name, PTX lines) instead of launching."""
    from triton.runtime.jit import JITFunction

    run = JITFunction.run

    def warm_run(self, *args, grid, warmup, **kwargs):  # type: ignore[no-untyped-def]
        kernel = run(self, *args, grid=grid, warmup=True, **kwargs)
        compiled.append((self.fn.__name__, kernel.asm["ptx"].count("\n")))
        return kernel

    JITFunction.run = warm_run  # type: ignore[method-assign]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability as one number (90: Hopper)")
    parser.add_argument("--ops", help="comma-separated ops (default: every op of a reference kernel in problems/)")
    parser.add_argument("--all-shapes", action="store_true", help="every smoke shape (default: the first)")
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET"):
        raise SystemExit("kb_compile_check: unset TRITON_INTERPRET (the interpreter compiles nothing)")
    sys.path.insert(0, str(ROOT))
    import torch
    from triton.runtime import driver

    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file
    from aka_tui.knowledge.reference_kernels import reference_kernels
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    driver.set_active(_TargetDriver(args.arch))
    compiled: list[tuple[str, int]] = []
    _compile_only(compiled)
    wanted = set(args.ops.split(",")) if args.ops else None
    failed = 0
    for kernel in reference_kernels(load_kb(default_kb_dir())):
        for op in kernel.ops:
            if not (ROOT / "problems" / op).is_dir() or (wanted is not None and op not in wanted):
                continue
            problem = load_problem(ROOT / "problems" / op)
            module = import_file(kernel.path, f"compile_check_{kernel.path.stem}")
            inputs_module = import_file(problem.input_path, f"compile_check_inputs_{op}")
            shapes = problem.shapes_for("smoke")
            compiled.clear()
            try:
                for shape in shapes if args.all_shapes else shapes[:1]:
                    inputs = make_inputs(problem, inputs_module, shape, "cpu", 0)
                    with torch.no_grad():
                        module.Model(**shape.init_kwargs)(**inputs)
            except Exception as exc:  # one line per failure; the run goes on to the next kernel
                failed += 1
                first = str(exc).strip().splitlines()
                print(f"FAIL {kernel.path.name} on {op}: {type(exc).__name__}: {first[0][:200] if first else ''}")
                continue
            kernels = ", ".join(f"{name} ({lines} PTX lines)" for name, lines in compiled) or "no Triton launch"
            print(f"ok   {kernel.path.name} on {op}: {kernels}")
    print(f"sm_{args.arch}: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
