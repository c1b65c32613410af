"""On a CUDA GPU: the fused MoE reference kernel's block-scaled fp8 path against the float64 reference on
serving sizes (fp8 x fp8 dots for e4m3fn, decoded fnuz, w8a16 bf16, the fp32 SwiGLU output split into two bf16
dots, an fnuz output encoded in software), the plain bf16 path unchanged, and the published fp8 block-scale
MoE's transferred candidate through the evaluator where the published subset is present."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.inputs import upcast_inputs
from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

pytestmark = pytest.mark.gpu
KERNEL = import_file(REPO / "kb/family/moe/moe_fused_experts.py", "moe_block_scaled_gpu_kernel")
REFERENCE = import_file(REPO / "problems/moe_fused_experts/reference.py", "moe_block_scaled_gpu_reference")
INPUTS = import_file(REPO / "problems/moe_fused_experts/input.py", "moe_block_scaled_gpu_inputs")
SIZES = {"deepseek_tp8_decode_t64": dict(num_tokens=64, hidden_size=7168, intermediate_size=256, num_experts=256,
                                         top_k=8),
         "qwen3_prefill_t2048": dict(num_tokens=2048, hidden_size=2048, intermediate_size=768, num_experts=128,
                                     top_k=8),
         "odd_t37_h1408_i704_e16_k3": dict(num_tokens=37, hidden_size=1408, intermediate_size=704, num_experts=16,
                                           top_k=3)}
VARIANTS = {"w8a8-e4m3fn-bf16-out": ("bfloat16", dict(quant="w8a8")),
            "w8a8-fnuz-fnuz-out": (None, dict(quant="w8a8", fp8="float8_e4m3fnuz")),
            "w8a16-bf16": (None, dict(quant="w8a16")),
            "w8a8-e4m3fn-fp32-out": ("float32", dict(quant="w8a8"))}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_block_scaled_experts_match_the_float64_reference(variant: str, size: str) -> None:
    out_dtype, quant = VARIANTS[variant]
    torch.manual_seed(0)
    inputs = INPUTS._make_inputs(**SIZES[size], dtype="bfloat16", device="cuda", **quant)
    got = KERNEL.Model(out_dtype)(**inputs)
    native = REFERENCE.Model(out_dtype)(**inputs)
    exact = REFERENCE.Model(out_dtype)(**upcast_inputs(inputs)).double()
    assert got.dtype == native.dtype
    if got.dtype.itemsize == 1:  # fp8 output: within one rounding step of the exact value (or its NaN)
        torch.testing.assert_close(got.double(), exact.to(got.dtype).double(), atol=2.0 ** -9, rtol=0.13,
                                   equal_nan=True)
        return
    # float32 out of fp8 x fp8 dots: Hopper's fp8 MMA sums each 128-wide scale block with fewer mantissa bits
    # than fp32 (H200, 2026-12-02: max abs error 1.9e-4 at t2048, |out| up to 1.5; the float32 reference itself is
    # within 2e-6 of float64), so 5e-4: ten times tighter than the evaluator's 5e-3 for float32 out of fp8 inputs
    tol = {torch.bfloat16: 0.02, torch.float32: 5e-4 if quant["quant"] == "w8a8" else 1e-4}[got.dtype]
    torch.testing.assert_close(got.double(), exact, atol=tol, rtol=tol)


def test_the_plain_bf16_path_is_unchanged_by_the_scaled_branch() -> None:
    """No scales: the same outputs with and without the (absent) scale arguments passed as None."""
    torch.manual_seed(0)
    inputs = INPUTS._make_inputs(**SIZES["qwen3_prefill_t2048"], dtype="bfloat16", device="cuda")
    plain = KERNEL.Model()(**inputs)
    assert torch.equal(plain, KERNEL.Model()(**inputs, w1_scale=None, w2_scale=None, a1_scale=None))
    exact = REFERENCE.Model()(**upcast_inputs(inputs)).double()
    torch.testing.assert_close(plain.double(), exact, atol=0.02, rtol=0.02)


@pytest.mark.parametrize("rules", [dict(HALF_M_GAIN=15, HALF_M_WARPS=4), dict(NARROW_N_GAIN=10),
                                   dict(HALF_M_GAIN=10, NARROW_N_GAIN=20)])
def test_batch_aware_tiles_match_the_float64_reference(rules: dict) -> None:
    """The padding-aware row tiles and the wave-aware N tiles (off by default) on mid-sized batches, where they
    change the tiles on an H100/H200 (132 SMs): 1023 tokens top-2 of 8 experts, 2044 tokens top-8 of 128."""
    KERNEL._PLANS.clear()
    for size in (dict(num_tokens=1023, hidden_size=2048, intermediate_size=1024, num_experts=8, top_k=2),
                 dict(num_tokens=2044, hidden_size=1024, intermediate_size=384, num_experts=128, top_k=8)):
        torch.manual_seed(0)
        inputs = INPUTS._make_inputs(**size, dtype="bfloat16", device="cuda")
        cfg = {**KERNEL.TUNABLES, **rules}
        got = KERNEL.launch_moe_fused_experts(inputs["hidden"], inputs["w1"], inputs["w2"], inputs["topk_weights"],
                                              inputs["topk_ids"], cfg)
        exact = REFERENCE.Model()(**upcast_inputs(inputs)).double()
        torch.testing.assert_close(got.double(), exact, atol=0.02, rtol=0.02)
    changed = [plan for plan in KERNEL._PLANS.values()
               if (plan["bm"], plan["tiles1"][0], plan["tiles2"][0]) != (128, 128, 256)]
    assert changed, "the rules changed no tile on these batches"
