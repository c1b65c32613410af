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

No kernel writes its outputs in that run. Where the candidate reads one back on the host and the run then fails,
the check runs the candidate once under the interpreter on the same inputs, records what its code read
(host_reads.py), and compiles again with those values given back in order.
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
from typing import TYPE_CHECKING, Any

from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import ResourceLimits, printable
from aka_tui.environment import environment_snapshot
from aka_tui.errors import AkaError
from aka_tui.secrets import scrub

if TYPE_CHECKING:
    from aka_tui.bench.evaluator.host_reads import HostReads

_ARCH = re.compile(r"^(?:sm_?)?(\d{2,3})a?$")


@dataclass(frozen=True)
class TargetCompile:
    """What compiled: (kernel, PTX lines) per launch, or the first line of the failure."""

    arch: int
    kernels: tuple[tuple[str, int], ...] = ()
    error: str = ""
    sandbox: str = ""
    replayed: int = 0  # host reads of kernel outputs given the values of an interpreted run

    @property
    def ok(self) -> bool:
        return not self.error

    def line(self) -> str:
        if self.error:
            return f"sm_{self.arch}: does not compile: {self.error}"
        names = sorted({name for name, _ in self.kernels})
        replayed = f"; {self.replayed} host read(s) of kernel outputs from an interpreted run" if self.replayed else ""
        return (f"sm_{self.arch}: compiles ({len(self.kernels)} launch(es) of {', '.join(names)}{replayed})" if names
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


def _run_candidate(problem_dir: Path, candidate: Path, shape_ids: list[str] | None, replay: list[Any] | None,
                   compiled: list[tuple[str, int]] | None) -> tuple[str, HostReads]:
    """The candidate's Model on the problem's shapes (default: its first smoke shape) with CPU tensors, its host
    reads recorded (or replayed); the failure's first line, or "". `compiled` is the compile-only launch list
    (None under the interpreter)."""
    import torch

    from aka_tui.bench.evaluator.host_reads import host_reads  # imports torch: not before TRITON_INTERPRET is set
    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.problem.module_loading import import_file
    from aka_tui.bench.problem.settled_order import import_reference

    problem = load_problem(problem_dir)
    with host_reads(str(candidate), replay, lambda: bool(compiled)) as reads:
        try:
            shapes = [problem.shapes[s] for s in shape_ids] if shape_ids else problem.shapes_for("smoke")[:1]
            module = import_file(candidate, "target_compile_candidate")
            inputs_module = import_file(problem.input_path, "target_compile_inputs")
            reference = import_reference(problem.reference_path, "target_compile_reference")
            for shape in shapes:
                inputs = make_inputs(problem, inputs_module, shape, "cpu", 0)
                model = module.Model(**shape.init_kwargs)
                state = reference.Model(**shape.init_kwargs).state_dict()
                if state and isinstance(model, torch.nn.Module):  # as the evaluator builds a candidate
                    model.load_state_dict(state)
                with torch.no_grad():
                    model(**inputs)
        except Exception as exc:  # the failure's first line is the answer
            lines = str(exc).strip().splitlines()
            detail = next((ln.strip() for ln in lines if "Error" in ln), lines[0] if lines else "")
            return f"{type(exc).__name__}: {detail[:300]}", reads
    return "", reads


def run_in_process(problem_dir: Path, candidate: Path, arch: int, shape_ids: list[str] | None = None,
                   replay: list[Any] | None = None) -> tuple[TargetCompile, int]:
    """The check in this process (trusted code only: `compile_for_target` is the sandboxed form); the kernels
    of this call only, when called for several candidates. Also: how many host reads came after a compile-only
    launch with no value to replay."""
    compiled = install_compile_only(arch)
    compiled.clear()
    error, reads = _run_candidate(problem_dir, candidate, shape_ids, replay, compiled)
    replayed = min(len(replay), len(reads.values)) if replay else 0
    return TargetCompile(arch, tuple(compiled), error, replayed=replayed), reads.after_launch


def record_in_process(problem_dir: Path, candidate: Path, shape_ids: list[str] | None = None) -> list[Any] | None:
    """The candidate's host reads with its kernels run by the interpreter (a process with TRITON_INTERPRET=1);
    None when the run fails or the reads are too many to replay."""
    error, reads = _run_candidate(problem_dir, candidate, shape_ids, None, None)
    return None if error else reads.record()


def compile_for_target(problem_dir: Path, candidate: Path, arch: int = 90, shape_ids: list[str] | None = None,
                       sandbox: str | None = None, timeout_s: float = 600.0) -> TargetCompile:
    """Compile the candidate's launches on the problem's shapes (default: its first smoke shape) for `arch`, in a
    sandboxed process of their own; where it fails after reading kernel outputs on the host, again with the
    values an interpreted run read."""
    paths = [str(problem_dir.resolve()), str(candidate.resolve()), str(arch), *(shape_ids or [])]
    data, failure, where = _spawn(["compile", *paths], (problem_dir, candidate), sandbox, timeout_s)
    if data is None:
        return TargetCompile(arch, error=failure, sandbox=where)
    result = _result(arch, data, where)
    if result.ok or not data.get("unwritten_reads"):
        return result
    record, _, _ = _spawn(["record", *paths], (problem_dir, candidate), sandbox, timeout_s, interpret=True)
    if record is None or not isinstance(record.get("reads"), list):
        return result
    again, _, _ = _spawn(["compile", *paths], (problem_dir, candidate), sandbox, timeout_s,
                         stdin=json.dumps(record["reads"]).encode())
    return result if again is None else _result(arch, again, where)


def _result(arch: int, data: dict[str, Any], sandbox: str) -> TargetCompile:
    return TargetCompile(arch, tuple((str(n), int(k)) for n, k in data["kernels"]), scrub(str(data["error"])),
                         sandbox, int(data.get("replayed") or 0))


def _spawn(argv: list[str], paths: tuple[Path, Path], sandbox: str | None, timeout_s: float, interpret: bool = False,
           stdin: bytes | None = None) -> tuple[dict[str, Any] | None, str, str]:
    """This module as a sandboxed process: its JSON line (None if it printed none), else the failure's line, and
    the sandbox's line."""
    env = {k: v for k, v in environment_snapshot().items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    with tempfile.TemporaryDirectory(prefix="aka-target-compile-", ignore_cleanup_errors=True) as tmp:
        view = bwrap.View(Path(tmp), tuple(p.resolve() for p in paths), (), False, {})
        limits = ResourceLimits(memory_bytes=8 << 30, cpu_s=timeout_s, tasks=256)
        process, report = bwrap.spawn([sys.executable, "-m", __name__, *argv], view, limits, sandbox,
                                      env_source=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = process.proc.communicate(input=stdin, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"not done in {timeout_s:.0f} s", report.line()
        finally:
            process.kill()
            process.close()
    for line in reversed(out.decode(errors="replace").splitlines()):
        if line.startswith("{"):
            try:  # kernel names and errors are the candidate's to choose
                return printable(json.loads(line)), "", report.line()
            except ValueError:
                break
    tail = [ln for ln in printable(err.decode(errors="replace")).splitlines() if ln.strip()]
    return None, (scrub(tail[-1][:300]) if tail else f"the check exited with {process.proc.returncode}"), report.line()


def _main(argv: list[str]) -> int:
    mode, problem_dir, candidate, arch, *shape_ids = argv
    if mode == "record":
        print(json.dumps({"reads": record_in_process(Path(problem_dir), Path(candidate), shape_ids or None)}))
        return 0
    replay = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    result, unwritten = run_in_process(Path(problem_dir), Path(candidate), int(arch), shape_ids or None,
                                       json.loads(replay) if replay else None)
    print(json.dumps({"kernels": result.kernels, "error": result.error, "unwritten_reads": unwritten,
                      "replayed": result.replayed}))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["record"]:
        os.environ.pop("TRITON_INTERPRET", None)  # before anything imports Triton
    sys.exit(_main(sys.argv[1:]))
