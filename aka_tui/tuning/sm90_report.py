"""Compile one Triton kernel for sm_90 on a machine without a GPU and report what its code does per loop.

A tuning aid that needs no H200: it found the fp8 GEMM converting its scale vector to the MMA layout through
shared memory every K step, and MLA decode keeping a pointer per latent row (246-255 registers, spills), before
either was measured (BENCHMARKS.md). The report: registers, spill bytes and shared memory (ptxas), the MMA
instructions, the wgmma waits and their pending counts, cp.async copies, global load widths, and the layout
conversions inside loops.

    python -m aka_tui.tuning.sm90_report FILE KERNEL --sig NAME=TYPE ... [--const NAME=VALUE ...]
        [--num-warps 4] [--num-stages 3] [--div16 NAME,...]

TYPE is a Triton signature type (*bf16, *fp8e4nv, *fp32, *i32, i32, fp32, ...). Integer arguments whose
value is 1 at run time (a contiguous stride) must be given with --const NAME=1: Triton specializes them,
and leaving them as i32 makes every load look scalar. --div16 lists the integer and pointer arguments that
are multiples of 16 at run time (Triton specializes those too); by default every pointer is. Run it without
TRITON_INTERPRET (the interpreter's kernels cannot be compiled).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from aka_tui.environment import environment_snapshot
from aka_tui.errors import AkaError, run_main


class Sm90ReportError(AkaError):
    """The kernel cannot be compiled for sm_90 as asked: unknown file or kernel, a missing argument type."""

    title = "sm_90 report"


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def loop_bodies(ttgir: str) -> list[str]:
    """The text of every scf.for body (nested loops are included in their parent's text)."""
    bodies, lines = [], ttgir.splitlines()
    for i, line in enumerate(lines):
        if "scf.for" not in line:
            continue
        depth, body = line.count("{") - line.count("}"), []
        for follow in lines[i + 1:]:
            depth += follow.count("{") - follow.count("}")
            if depth <= 0:
                break
            body.append(follow)
        bodies.append("\n".join(body))
    return bodies


def report(ptx: str, ttgir: str, ptxas_out: str, smem_bytes: int | None = None) -> dict[str, Any]:
    """Counts from the compiled code (see the module docstring)."""
    def counts(pattern: str, text: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for m in re.findall(pattern, text):
            found[m] = found.get(m, 0) + 1
        return found

    regs = re.search(r"Used (\d+) registers", ptxas_out)
    spills = re.search(r"(\d+) bytes spill stores", ptxas_out)
    loops = loop_bodies(ttgir)
    return {
        "registers": int(regs.group(1)) if regs else None,
        "spill_store_bytes": int(spills.group(1)) if spills else None,
        "smem_bytes": smem_bytes,  # Triton's dynamic shared memory (ptxas -v shows only static)
        "mma": counts(r"(wgmma\.mma_async[\w.]*|mma\.sync\.aligned[\w.]*)", ptx),
        "wgmma_waits": counts(r"wgmma\.wait_group\.sync\.aligned (\d+)", ptx),
        "cp_async": len(re.findall(r"cp\.async\.c[ag]", ptx)),
        "global_loads": counts(r"(ld\.global[\w.]*)", ptx),
        "loops": len(loops),
        "convert_layouts_in_loops": sum(body.count("ttg.convert_layout") for body in loops),
    }


def compile_for_sm90(path: Path, kernel: str, sig: dict[str, str], consts: dict[str, Any], div16: set[str],
                     num_warps: int, num_stages: int, maxnreg: int | None = None) -> tuple[str, str, int]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from aka_tui.bench.problem.module_loading import import_file

    if not path.is_file():
        raise Sm90ReportError(f"no file {path}")
    fn = getattr(import_file(path, "sm90_report"), kernel, None)
    if fn is None or not hasattr(fn, "arg_names"):
        raise Sm90ReportError(f"{path} has no Triton kernel {kernel!r}")
    full: dict[str, str] = {}
    for name in fn.arg_names:
        if name in consts:
            full[name] = "constexpr"
        elif name in sig:
            full[name] = sig[name]
        else:
            raise Sm90ReportError(f"{kernel}: give --sig {name}=TYPE or --const {name}=VALUE")
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if full[name] != "constexpr" and (name in div16 or full[name].startswith("*"))}
    compiled = triton.compile(ASTSource(fn=fn, signature=full, constexprs=consts, attrs=attrs),
                              target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": num_warps, "num_stages": num_stages,
                                       **({"maxnreg": maxnreg} if maxnreg else {})})
    return compiled.asm["ptx"], compiled.asm["ttgir"], int(compiled.metadata.shared)


def ptxas_info(ptx: str) -> str:
    import triton

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        done = subprocess.run([str(ptxas), "-arch=sm_90a", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")],
                              capture_output=True, text=True, env=environment_snapshot())
    return done.stdout + done.stderr


def _pair(text: str, flag: str, form: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise Sm90ReportError(f"{flag} takes {form}, not {text!r}")
    return name, value


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The report's arguments (`main`'s parser; a CLI subcommand can take them as they are)."""
    ap.add_argument("file", type=Path, help="the Python file that defines the kernel")
    ap.add_argument("kernel", help="the @triton.jit function's name")
    ap.add_argument("--sig", action="append", default=[], metavar="NAME=TYPE",
                    help="a run-time argument's Triton type (*bf16, *fp8e4nv, i32, fp32, ...)")
    ap.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                    help="a constexpr (or an integer that is 1 at run time) and its value")
    ap.add_argument("--div16", default="", help="comma-separated integer arguments that are multiples of 16")
    ap.add_argument("--num-warps", type=int, default=4)
    ap.add_argument("--num-stages", type=int, default=3)
    ap.add_argument("--maxnreg", type=int, default=None, help="cap the registers per thread (ptx .maxnreg)")


def run(args: argparse.Namespace) -> int:
    """Compile as `args` say and print one line per figure of `report`."""
    sig = dict(_pair(s, "--sig", "NAME=TYPE") for s in args.sig)
    consts = {k: _value(v) for k, v in (_pair(c, "--const", "NAME=VALUE") for c in args.const)}
    div16 = set(filter(None, args.div16.split(",")))
    try:
        ptx, ttgir, smem = compile_for_sm90(args.file, args.kernel, sig, consts, div16, args.num_warps,
                                            args.num_stages, args.maxnreg)
    except Sm90ReportError:
        raise
    except Exception as exc:  # a kernel that does not compile for sm_90: say why in a few lines
        first = str(exc).strip().splitlines()
        raise Sm90ReportError(f"{args.kernel} does not compile for sm_90: {type(exc).__name__}: "
                              + " / ".join(first[-3:])) from None
    for key, value in report(ptx, ttgir, ptxas_info(ptx), smem).items():
        print(f"{key:26s} {value}")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m aka_tui.tuning.sm90_report",
                                 description=(__doc__ or "").split("\n\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
