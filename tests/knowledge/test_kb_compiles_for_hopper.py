"""Every reference kernel of the shipped knowledge base compiles for Hopper (sm_90) at its smoke shapes, on this
CPU-only machine: Triton's full compile pipeline, which the CPU interpreter skips (scripts/kb_compile_check.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb
from tests.conftest import PROBLEMS, REPO


def test_every_reference_kernel_compiles_for_sm90(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(REPO), TRITON_CACHE_DIR=str(tmp_path / "triton-cache"))
    run = subprocess.run([sys.executable, str(REPO / "scripts/kb_compile_check.py"), "--arch", "90"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    checked = {line.split(" on ")[1].split(":")[0] for line in run.stdout.splitlines() if line.startswith("ok ")}
    ops = {op for k in reference_kernels(load_kb(default_kb_dir())) for op in k.ops if (PROBLEMS / op).is_dir()}
    assert checked == ops, sorted(ops ^ checked)
    assert "no Triton launch" not in run.stdout
