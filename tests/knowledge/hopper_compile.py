"""Run a script that compiles KB kernels for a GPU target (bench/evaluator/target_compile.py) in a process
without the CPU interpreter, which accepts code the compiler rejects."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def run_compile_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -c script args…` from the repository, TRITON_INTERPRET unset; fails the test on a non-zero exit."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    run = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return run
