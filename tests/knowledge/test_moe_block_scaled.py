"""The fused MoE reference kernel's block-scaled fp8 path on the CPU interpreter: the software codec of the
fnuz encoding (which NVIDIA Triton cannot type) is exact, and the kernel reproduces its problem's reference for
w8a8 (e4m3fn and fnuz), w8a16, block sizes read from the scale shapes and partial edge blocks. The bf16 dots
of the GPU path (bf16 activations with fp8 weights; the fp32 SwiGLU output of fp8 activations split into bf16
halves, ACT_SPLIT, which the launcher takes on CUDA only) are not checked here: the interpreter's bf16 dots
are not reliable (tests/gpu/test_moe_block_scaled_gpu.py checks them)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

KERNEL = import_file(REPO / "kb/family/moe/moe_fused_experts.py", "moe_block_scaled_kernel")
REFERENCE = import_file(REPO / "problems/moe_fused_experts/reference.py", "moe_block_scaled_reference")
INPUTS = import_file(REPO / "problems/moe_fused_experts/input.py", "moe_block_scaled_inputs")
_decode = KERNEL._fnuz_to_fp16
_encode = KERNEL._e4m3fnuz_bits


@triton.jit
def _decode_kernel(codes_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _decode(tl.load(codes_ptr + offs)).to(tl.float32))


@triton.jit
def _encode_kernel(x_ptr, codes_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(codes_ptr + offs, _encode(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


def test_fnuz_codes_decode_and_encode_as_torch_does() -> None:
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    decoded = torch.empty(256)
    _decode_kernel[(1,)](codes, decoded, BLOCK=256)
    want = codes.view(torch.float8_e4m3fnuz).float()
    finite = torch.isfinite(want)  # 0x80 is the encoding's only NaN
    assert torch.equal(decoded[finite], want[finite]) and int((~finite).sum()) == 1

    grid = codes[:128].view(torch.float8_e4m3fnuz).float()
    ties = (grid[1:] + grid[:-1]) / 2  # every midpoint: nearest even
    near = torch.cat([torch.nextafter(ties, torch.tensor(0.0)), torch.nextafter(ties, torch.tensor(1e9))])
    special = torch.tensor([0.0, -0.0, 240.0, 247.9, 248.0, 255.9, 256.0, 1e6, float("inf"), float("-inf"),
                            float("nan"), 2.0 ** -11, -(2.0 ** -11), 2.0 ** -12])
    x = torch.cat([ties, -ties, near, -near, special, torch.randn(4096) * 30, torch.randn(4096) * 1e-3])
    encoded = torch.empty(x.numel(), dtype=torch.uint8)
    _encode_kernel[(triton.cdiv(x.numel(), 1024),)](x, encoded, x.numel(), BLOCK=1024)
    assert torch.equal(encoded, x.to(torch.float8_e4m3fnuz).view(torch.uint8))


def _exact(out_dtype: str | None, inputs: dict) -> torch.Tensor:
    """The reference on float64 copies of the inputs (fp8 values and scales are exact there)."""
    upcast = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
    return REFERENCE.Model(out_dtype)(**upcast).double()


CASES = {
    "w8a8-e4m3fn-fp32-out": ("float32", dict(dtype="float32", quant="w8a8")),
    "w8a8-fnuz-fp32-out": ("float32", dict(dtype="float32", quant="w8a8", fp8="float8_e4m3fnuz")),
    "w8a16-fp32": (None, dict(dtype="float32", quant="w8a16", block=64)),
    "w8a16-fp16": (None, dict(dtype="float16", quant="w8a16", block=32)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_block_scaled_experts_match_the_reference(case: str) -> None:
    """7 tokens, H 256, I 96 (2I = 192: with 128-blocks a gate/up block shared, and partial edge blocks)."""
    out_dtype, kwargs = CASES[case]
    torch.manual_seed(0)
    inputs = INPUTS._make_inputs(num_tokens=7, hidden_size=256, intermediate_size=96, num_experts=4, top_k=2,
                                 device="cpu", **kwargs)
    exact = _exact(out_dtype, inputs)
    got = KERNEL.Model(out_dtype)(**inputs)
    assert got.dtype == REFERENCE.Model(out_dtype)(**inputs).dtype
    tol = 2e-3 if got.dtype == torch.float16 else 1e-5
    torch.testing.assert_close(got.double(), exact, atol=tol, rtol=tol)
    if "w1_scale" in inputs:  # the scales are applied: without them the result is another one
        wrong = KERNEL.Model(out_dtype)(**{**inputs, "w1_scale": torch.ones_like(inputs["w1_scale"])})
        assert not torch.allclose(wrong.double(), exact, atol=0.1, rtol=0.1)


def test_activation_groups_may_differ_from_the_weight_blocks() -> None:
    """Activations quantised per 64 columns, weights per 128 x 128 block: every K step lies in one of each."""
    torch.manual_seed(1)
    inputs = INPUTS._make_inputs(num_tokens=5, hidden_size=256, intermediate_size=128, num_experts=3, top_k=2,
                                 dtype="float32", device="cpu", quant="w8a16")
    hidden, a1_scale = INPUTS._quantise(inputs["hidden"], (1, 64), torch.float8_e4m3fn)
    inputs.update(hidden=hidden, a1_scale=a1_scale)
    exact = _exact("float32", inputs)
    torch.testing.assert_close(KERNEL.Model("float32")(**inputs).double(), exact, atol=1e-5, rtol=1e-5)


def test_scales_that_do_not_tile_the_weights_are_refused() -> None:
    torch.manual_seed(2)
    inputs = INPUTS._make_inputs(num_tokens=3, hidden_size=128, intermediate_size=64, num_experts=2, top_k=1,
                                 dtype="float32", device="cpu", quant="w8a16", block=32)
    with pytest.raises(ValueError, match="both w1_scale and w2_scale"):
        KERNEL.Model()(**{**inputs, "w2_scale": None})
    with pytest.raises(ValueError, match="do not tile"):
        KERNEL.Model()(**{**inputs, "w1_scale": inputs["w1_scale"][:, :, :3]})


def test_launch_plans_follow_the_tunables_and_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher caches its tiles and schedule per batch geometry, dtypes, scale shapes and the tunables'
    values: another tile configuration (as a search passes it) and another batch each get a plan of their own,
    and every launch reproduces the reference."""
    monkeypatch.setattr(KERNEL, "_PLANS", {})
    torch.manual_seed(3)
    inputs = INPUTS._make_inputs(num_tokens=6, hidden_size=64, intermediate_size=32, num_experts=3, top_k=2,
                                 dtype="float32", device="cpu")
    want = REFERENCE.Model()(**inputs)
    for block_m in (16, 32):
        cfg = dict(KERNEL.TUNABLES, BLOCK_M=block_m, SMALL_MAX_PAIRS_PER_EXPERT=0)
        got = KERNEL.launch_moe_fused_experts(inputs["hidden"], inputs["w1"], inputs["w2"], inputs["topk_weights"],
                                              inputs["topk_ids"], cfg)
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    fewer = {name: t[:4] if name in ("hidden", "topk_weights", "topk_ids") else t for name, t in inputs.items()}
    torch.testing.assert_close(KERNEL.Model()(**fewer), REFERENCE.Model()(**fewer), atol=1e-4, rtol=1e-4)
    assert sorted((key[0], plan["bm"]) for key, plan in KERNEL._PLANS.items()) == [
        (4, KERNEL.regime_config(KERNEL.TUNABLES, 8, 3)["BLOCK_M"]), (6, 16), (6, 32)]
