"""Compile a candidate's Triton kernels for a GPU architecture on a machine without that GPU.

The CPU interpreter runs Triton code that the compiler rejects; a function whose constexpr branches return
tensors of different types is one example. The check works like this:
- Triton's NVIDIA backend is given a stand-in driver that reports the target.
- Every kernel launch becomes a compile-only warm-up.
- The candidate's Model runs on the problem's shapes with CPU tensors.
So each launch configuration its launcher picks goes through TTIR, TTGIR, LLVM, PTX and ptxas, and nothing runs
on a device.

The candidate's Python runs, so `compile_for_target` runs it in the sandbox, in its own process, without the
interpreter. `python -m aka_tui.bench.evaluator.target_compile` is that process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import ResourceLimits, printable
from aka_tui.environment import environment_snapshot
from aka_tui.errors import AkaError
from aka_tui.secrets import scrub

_ARCH = re.compile(r"^(?:sm_?)?(\d{2,3})a?$")


@dataclass(frozen=True)
class TargetCompile:
    """What compiled: (kernel, PTX lines) per launch, or the first line of the failure."""

    arch: int
    kernels: tuple[tuple[str, int], ...] = ()
    error: str = ""
    sandbox: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    def line(self) -> str:
        if self.error:
            return f"sm_{self.arch}: does not compile: {self.error}"
        names = sorted({name for name, _ in self.kernels})
        return (f"sm_{self.arch}: compiles ({len(self.kernels)} launch(es) of {', '.join(names)})" if names
                else f"sm_{self.arch}: no Triton launch on these shapes (nothing to compile)")


def parse_arch(text: str) -> int:
    """`sm_90`, `sm90a` or `90` as the compute capability 90."""
    match = _ARCH.match(text.strip().lower())
    if not match:
        raise AkaError(f"{text!r} is not a GPU architecture; give one like sm_90 (Hopper) or sm_80 (Ampere)")
    return int(match.group(1))


class _TargetDriver:
    """The part of Triton's driver interface that compiling (not launching) needs, for one architecture."""

    def __init__(self, arch: int) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target


_COMPILED: list[tuple[str, int]] | None = None  # the launches compiled in this process, once installed


def install_compile_only(arch: int) -> list[tuple[str, int]]:
    """From now on in this process, Triton compiles for `arch` and every launch is a compile-only warm-up;
    returns the list each compiled launch is appended to, as (kernel name, PTX lines). Needs a process whose
    Triton was imported without TRITON_INTERPRET. Called again, it only changes the target."""
    global _COMPILED
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    if os.environ.get("TRITON_INTERPRET"):
        raise AkaError("compiling for a GPU target needs a process without TRITON_INTERPRET")
    driver.set_active(_TargetDriver(arch))
    if _COMPILED is not None:
        return _COMPILED
    compiled: list[tuple[str, int]] = []
    run = JITFunction.run

    def warm_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = run(self, *args, grid=grid, warmup=True, **kwargs)
        compiled.append((self.fn.__name__, kernel.asm["ptx"].count("\n")))
        return kernel

    JITFunction.run = warm_run  # type: ignore[method-assign]
    _COMPILED = compiled
    return compiled


def run_in_process(problem_dir: Path, candidate: Path, arch: int, shape_ids: list[str] | None = None) -> TargetCompile:
    """The check in this process (trusted code only: `compile_for_target` is the sandboxed form); the kernels
    of this call only, when called for several candidates."""
    import torch

    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file

    compiled = install_compile_only(arch)
    compiled.clear()
    problem = load_problem(problem_dir)
    try:
        shapes = [problem.shapes[s] for s in shape_ids] if shape_ids else problem.shapes_for("smoke")[:1]
        module = import_file(candidate, "target_compile_candidate")
        inputs_module = import_file(problem.input_path, "target_compile_inputs")
        for shape in shapes:
            inputs = make_inputs(problem, inputs_module, shape, "cpu", 0)
            with torch.no_grad():
                module.Model(**shape.init_kwargs)(**inputs)
    except Exception as exc:  # the failure's first line is the answer
        lines = str(exc).strip().splitlines()
        detail = next((ln.strip() for ln in lines if "Error" in ln), lines[0] if lines else "")
        return TargetCompile(arch, tuple(compiled), f"{type(exc).__name__}: {detail[:300]}")
    return TargetCompile(arch, tuple(compiled))


def compile_for_target(problem_dir: Path, candidate: Path, arch: int = 90, shape_ids: list[str] | None = None,
                       sandbox: str | None = None, timeout_s: float = 600.0) -> TargetCompile:
    """Compile the candidate's launches on the problem's shapes (default: its first smoke shape) for `arch`, in a
    sandboxed process of their own."""
    env = {k: v for k, v in environment_snapshot().items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory(prefix="aka-target-compile-", ignore_cleanup_errors=True) as tmp:
        view = bwrap.View(Path(tmp), (problem_dir.resolve(), candidate.resolve()), (), False, {})
        limits = ResourceLimits(memory_bytes=8 << 30, cpu_s=timeout_s, tasks=256)
        argv = [sys.executable, "-m", __name__, str(problem_dir.resolve()), str(candidate.resolve()), str(arch),
                *(shape_ids or [])]
        process, report = bwrap.spawn(argv, view, limits, sandbox, env_source=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = process.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return TargetCompile(arch, error=f"not done in {timeout_s:.0f} s", sandbox=report.line())
        finally:
            process.kill()
            process.close()
    for line in reversed(out.decode(errors="replace").splitlines()):
        if line.startswith("{"):
            data = printable(json.loads(line))  # kernel names and errors are the candidate's to choose
            return TargetCompile(arch, tuple((str(n), int(k)) for n, k in data["kernels"]), scrub(data["error"]),
                                 report.line())
    tail = [ln for ln in printable(err.decode(errors="replace")).splitlines() if ln.strip()]
    return TargetCompile(arch, error=scrub(tail[-1][:300]) if tail else f"the check exited with {process.proc.returncode}",
                         sandbox=report.line())


def _main(argv: list[str]) -> int:
    problem_dir, candidate, arch, *shape_ids = argv
    result = run_in_process(Path(problem_dir), Path(candidate), int(arch), shape_ids or None)
    print(json.dumps({"kernels": result.kernels, "error": result.error}))
    return 0


if __name__ == "__main__":
    os.environ.pop("TRITON_INTERPRET", None)  # before anything imports Triton
    sys.exit(_main(sys.argv[1:]))
