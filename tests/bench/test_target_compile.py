"""Compiling a candidate for a GPU architecture on this CPU-only machine (`aka eval --compile-for`): Triton's whole
compiler, which the interpreter skips, in the sandbox."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from aka_tui.bench.evaluator.target_compile import compile_for_target, parse_arch
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.errors import AkaError
from tests.conftest import PROBLEMS, REPO

GOOD = REPO / "kb/family/norm/rms_norm.py"
INTERPRETER_ONLY = REPO / "tests/data/candidates/rms_norm_interpreter_only.py"


def test_a_kb_kernel_compiles_for_hopper() -> None:
    result = compile_for_target(PROBLEMS / "rms_norm", GOOD, parse_arch("sm_90"))
    assert result.ok, result.error
    assert [name for name, _ in result.kernels] == ["_rms_norm_kernel"] and result.kernels[0][1] > 100
    assert "compiles (1 launch(es) of _rms_norm_kernel)" in result.line()


def test_code_the_interpreter_runs_but_the_compiler_rejects_is_caught() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    reference = import_file(problem.reference_path, "target_compile_reference")
    candidate = import_file(INTERPRETER_ONLY, "target_compile_interpreter_only")
    x, w = torch.randn(5, 100), torch.randn(100)
    # under the interpreter (this test process) it is a correct RMSNorm ...
    torch.testing.assert_close(candidate.Model(100)(x, w), reference.Model(100)(x, w), rtol=1e-5, atol=1e-5)
    # ... that does not compile for a GPU
    result = compile_for_target(PROBLEMS / "rms_norm", INTERPRETER_ONLY, 90)
    assert not result.ok and result.kernels == ()
    assert result.error.startswith("CompilationError") and "\n" not in result.error
    assert "does not compile" in result.line()


def test_the_command_line_says_it_in_one_line() -> None:
    run = subprocess.run([sys.executable, "-m", "aka_tui", "eval", str(INTERPRETER_ONLY), "--problem", "rms_norm",
                          "--compile-for", "sm_90"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert run.returncode == 1, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1 and "rms_norm_interpreter_only.py: sm_90: does not compile: CompilationError" in lines[0]
    bad = subprocess.run([sys.executable, "-m", "aka_tui", "eval", str(GOOD), "--problem", "rms_norm",
                          "--compile-for", "volta"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "not a GPU architecture" in bad.stderr + bad.stdout


@pytest.mark.parametrize("text, arch", [("sm_90", 90), ("sm90a", 90), ("80", 80), ("SM_100", 100)])
def test_architectures_are_read_as_compute_capabilities(text: str, arch: int) -> None:
    assert parse_arch(text) == arch


def test_a_malformed_architecture_is_one_clear_error() -> None:
    with pytest.raises(AkaError, match="like sm_90"):
        parse_arch("hopper")


SIZED_BY_A_KERNEL = REPO / "tests/data/candidates/rms_norm_sized_by_a_kernel.py"


def test_host_reads_of_kernel_outputs_get_the_values_of_an_interpreted_run() -> None:
    """No kernel runs in the compile-only check: the candidate's `.item()` of its first kernel's output would read
    an unwritten buffer and stop before its second launch. The values come from an interpreted run instead."""
    problem = load_problem(PROBLEMS / "rms_norm")
    reference = import_file(problem.reference_path, "target_compile_reference")
    candidate = import_file(SIZED_BY_A_KERNEL, "target_compile_sized_by_a_kernel")
    x, w = torch.randn(5, 100), torch.randn(100)
    torch.testing.assert_close(candidate.Model(100)(x, w), reference.Model(100)(x, w), rtol=1e-5, atol=1e-5)
    result = compile_for_target(PROBLEMS / "rms_norm", SIZED_BY_A_KERNEL, 90)
    assert result.ok, result.error
    assert [name for name, _ in result.kernels] == ["_widest_row_kernel", "_rms_norm_kernel"]
    assert result.replayed == 1 and "1 host read(s) of kernel outputs from an interpreted run" in result.line()

