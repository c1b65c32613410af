"""`python -m aka_tui.tuning.sm90_report`: compiles a KB kernel for sm_90 without a GPU and reports what its
K loop does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aka_tui.tuning.sm90_report import loop_bodies, report
from tests.conftest import REPO

FP8 = ["kb/family/gemm/gemm_fp8_blockscale.py", "_gemm_fp8_blockscale_kernel",
       "--sig", "a_ptr=*fp8e4nv", "--sig", "as_ptr=*fp32", "--sig", "b_ptr=*fp8e4nv", "--sig", "bs_ptr=*fp32",
       "--sig", "out_ptr=*bf16", "--sig", "ws_ptr=*bf16", "--num-stages", "4",
       *[a for n in ("M", "N", "K", "k_per_split", "stride_am", "stride_asm", "stride_asg", "stride_bn", "stride_bsn",
                     "stride_om") for a in ("--sig", f"{n}=i32")],
       *[a for c in ("GROUP=128", "SPLIT_K=1", "UPCAST=False", "PREFETCH_SCALES=True", "BLOCK_M=64",
                     "BLOCK_N=128", "BLOCK_K=128", "GROUP_M=8") for a in ("--const", c)],
       "--div16", "M,N,K,k_per_split,stride_am,stride_bn,stride_om"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """A fresh process without TRITON_INTERPRET (this one has it on the CPU: its kernels cannot be compiled)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "aka_tui.tuning.sm90_report", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def _report(*extra: str) -> dict[str, str]:
    out = _run(*FP8, *extra)
    if out.returncode != 0 and "ptxas" in out.stderr and "No such file" in out.stderr:
        pytest.skip("this Triton build ships no ptxas")
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(line.split(None, 1) for line in out.stdout.splitlines() if line.strip())


def test_the_scalar_b_scale_takes_the_layout_conversion_out_of_the_k_loop() -> None:
    """The fp8 GEMM finding, reproduced from the compiled code: a [BLOCK_N] b-scale vector is converted to the
    MMA layout inside the K loop; the scalar form is not, and needs fewer registers."""
    scalar, vector = _report("--const", "SB_SCALAR=True"), _report("--const", "SB_SCALAR=False")
    assert scalar["convert_layouts_in_loops"] == "0" and int(vector["convert_layouts_in_loops"]) >= 1
    assert "wgmma" in scalar["mma"] and int(scalar["cp_async"]) > 0 and scalar["spill_store_bytes"] == "0"
    assert int(scalar["registers"]) < int(vector["registers"])


def test_a_missing_argument_is_named() -> None:
    out = _run(*FP8)
    assert out.returncode != 0 and "SB_SCALAR" in (out.stderr + out.stdout)


def test_counts_come_from_the_compiled_text() -> None:
    """Loop bodies (nested loops inside their parent), layout conversions in them, and the ptxas figures."""
    ttgir = "\n".join(["%0 = ttg.convert_layout %a", "scf.for %i = ... {", "  %1 = ttg.convert_layout %b",
                       "  scf.for %j = ... {", "    %2 = ttg.convert_layout %c", "  }", "}"])
    assert len(loop_bodies(ttgir)) == 2
    ptx = ("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3\nwgmma.wait_group.sync.aligned 1\n"
           "cp.async.cg.shared.global [a], [b], 16;\nld.global.v4.b32 {..}\nld.global.v4.b32 {..}")
    counts = report(ptx, ttgir, "ptxas info: Used 168 registers, 0 bytes spill stores, 0 bytes spill loads", 1024)
    assert counts["registers"] == 168 and counts["spill_store_bytes"] == 0 and counts["smem_bytes"] == 1024
    assert counts["mma"] == {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3": 1}
    assert counts["wgmma_waits"] == {"1": 1} and counts["cp_async"] == 1
    assert counts["global_loads"] == {"ld.global.v4.b32": 2}
    assert counts["loops"] == 2 and counts["convert_layouts_in_loops"] == 3  # the nested one counted in both
