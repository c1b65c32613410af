"""scripts/sm90_report.py: compiles a KB kernel for sm_90 without a GPU and reports what its K loop does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

FP8 = ["kb/family/gemm/gemm_fp8_blockscale.py", "_gemm_fp8_blockscale_kernel",
       "--sig", "a_ptr=*fp8e4nv", "--sig", "as_ptr=*fp32", "--sig", "b_ptr=*fp8e4nv", "--sig", "bs_ptr=*fp32",
       "--sig", "out_ptr=*bf16", "--sig", "ws_ptr=*bf16", "--num-stages", "4",
       *[a for n in ("M", "N", "K", "k_per_split", "stride_am", "stride_asm", "stride_asg", "stride_bn", "stride_bsn",
                     "stride_om") for a in ("--sig", f"{n}=i32")],
       *[a for c in ("GROUP=128", "SPLIT_K=1", "UPCAST=False", "PREFETCH_SCALES=True", "BLOCK_M=64",
                     "BLOCK_N=128", "BLOCK_K=128", "GROUP_M=8") for a in ("--const", c)],
       "--div16", "M,N,K,k_per_split,stride_am,stride_bn,stride_om"]


def _report(*extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "scripts/sm90_report.py", *FP8, *extra], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and "ptxas" in out.stderr and "No such file" in out.stderr:
        pytest.skip("this Triton build ships no ptxas")
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(line.split(None, 1) for line in out.stdout.splitlines() if line.strip())


def test_the_scalar_b_scale_takes_the_layout_conversion_out_of_the_k_loop() -> None:
    """Session 4's finding, reproduced from the compiled code: a [BLOCK_N] b-scale vector is converted to the
    MMA layout inside the K loop; the scalar form is not, and needs fewer registers."""
    scalar, vector = _report("--const", "SB_SCALAR=True"), _report("--const", "SB_SCALAR=False")
    assert scalar["convert_layouts_in_loops"] == "0" and int(vector["convert_layouts_in_loops"]) >= 1
    assert "wgmma" in scalar["mma"] and int(scalar["cp_async"]) > 0 and scalar["spill_store_bytes"] == "0"
    assert int(scalar["registers"]) < int(vector["registers"])


def test_a_missing_argument_is_named() -> None:
    out = subprocess.run([sys.executable, "scripts/sm90_report.py", *FP8], cwd=REPO, capture_output=True,
                         text=True, timeout=300, env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert out.returncode != 0 and "SB_SCALAR" in (out.stderr + out.stdout)
