"""The RMSNorm + fp8 quantisation reference kernel on the CPU interpreter: its e4m3fn / e4m3fnuz encoding in
integer operations against torch's own conversion, and the kernel against a PyTorch statement of its
semantics (float32 and bfloat16, residual or not, dynamic or static scale, one pass or the column loop)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

KERNEL = import_file(REPO / "kb/family/quantization/rms_norm_quant_fp8.py", "rms_norm_quant_fp8_test")
_encode = KERNEL._e4m3_bits
FORMATS = {"float8_e4m3fn": (torch.float8_e4m3fn, 448.0), "float8_e4m3fnuz": (torch.float8_e4m3fnuz, 240.0)}


@triton.jit
def _encode_kernel(v_ptr, code_ptr, n, FNUZ: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(v_ptr + offs, mask=offs < n, other=0.0)
    tl.store(code_ptr + offs, _encode(v, FNUZ).to(tl.uint8), mask=offs < n)


def _float32_from_bits(bits: torch.Tensor) -> torch.Tensor:
    bits = torch.where(bits >= 1 << 31, bits - (1 << 32), bits)
    return bits.to(torch.int32).view(torch.float32)


def _interesting_values() -> torch.Tensor:
    """Every sign, exponent and top 11 mantissa bits with the low 12 bits clear (each fp8 value, every rounding
    midpoint and the subnormal grid among them), and one fp32 ulp on either side of those in the binades from
    2^-17 to 2^9 (ties, subnormals, saturation); infinities, NaNs and random bit patterns."""
    top = torch.arange(0, 1 << 20, dtype=torch.int64) << 12
    exponents = (top >> 23) & 0xFF
    near = top[(exponents >= 110) & (exponents <= 136)]
    specials = torch.tensor([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 1, 0x80000001],
                            dtype=torch.int64)
    random = torch.randint(0, 1 << 32, (1 << 18,), generator=torch.Generator().manual_seed(0), dtype=torch.int64)
    return _float32_from_bits(torch.cat([top, near + 1, near - 1, specials, random]))


@pytest.mark.parametrize("name", list(FORMATS))
def test_e4m3_codes_match_torch(name: str) -> None:
    dtype, largest = FORMATS[name]
    values = _interesting_values()
    codes = torch.empty(values.numel(), dtype=torch.uint8)
    block = 1 << 16
    _encode_kernel[(triton.cdiv(values.numel(), block),)](values, codes, values.numel(), FNUZ=name.endswith("fnuz"),
                                                          BLOCK=block)
    nan = torch.isnan(values)
    # in range: exactly torch's conversion (round to nearest even, subnormals, signed zeros)
    in_range = values.abs() <= largest
    assert torch.equal(codes[in_range], values[in_range].to(dtype).view(torch.uint8))
    # beyond the largest value (infinities included) the codes saturate: torch's conversion of the clamped value
    clamped = values[~nan].clamp(-largest, largest).to(dtype).view(torch.uint8)
    assert torch.equal(codes[~nan], clamped)
    assert set(codes[nan].tolist()) == set(values[nan].to(dtype).view(torch.uint8).tolist())
    if name.endswith("fnuz"):  # no negative zero: 0x80 is the NaN
        assert int(codes[values == 0].max()) == 0 and set(codes[nan].tolist()) == {0x80}


def _reference(x: torch.Tensor, weight: torch.Tensor, eps: float, name: str, residual: torch.Tensor | None,
               scale: torch.Tensor | None) -> list[torch.Tensor]:
    """The kernel's semantics in PyTorch (its docstring): outputs in the kernel's order."""
    dtype, largest = FORMATS[name]
    residual_out = (x + residual) if residual is not None else None
    s = (residual_out if residual_out is not None else x).float()
    y = (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype).float()
    outputs = []
    if scale is None:
        scale = y.abs().amax(-1, keepdim=True) / largest
        scale = torch.where(scale == 0, torch.ones_like(scale), scale)
        outputs.append(scale)
    q = (y / scale).clamp(-largest, largest).to(dtype)
    return [q, *outputs] + ([residual_out] if residual_out is not None else [])


def _code_steps(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """How many fp8 grid steps apart two fp8 tensors are, elementwise (same sign assumed; zero is step 0)."""
    def index(t: torch.Tensor) -> torch.Tensor:
        codes = t.view(torch.uint8).to(torch.int32)
        negative = (codes & 0x80) != 0
        return torch.where(negative & ((codes & 0x7F) != 0), -(codes & 0x7F), codes & 0x7F)
    return (index(got) - index(want)).abs()


CASES = [  # out dtype, input dtype, residual, static scale, ONE_PASS, rows, width
    ("float8_e4m3fnuz", torch.float32, True, False, True, 5, 96),
    ("float8_e4m3fn", torch.float32, False, False, True, 3, 200),
    ("float8_e4m3fnuz", torch.float32, False, True, True, 4, 33),
    ("float8_e4m3fn", torch.float32, True, True, False, 3, 600),
    ("float8_e4m3fnuz", torch.float32, True, False, False, 2, 600),
    ("float8_e4m3fnuz", torch.bfloat16, True, False, True, 6, 200),
    ("float8_e4m3fn", torch.bfloat16, False, False, False, 3, 520),
]


@pytest.mark.parametrize("name, dtype, with_residual, static, one_pass, rows, width", CASES,
                         ids=[f"{c[0][10:]}-{str(c[1])[6:]}-{'res' if c[2] else 'nores'}-{'static' if c[3] else 'dyn'}"
                              f"-{'one' if c[4] else 'loop'}-{c[5]}x{c[6]}" for c in CASES])
@pytest.mark.parametrize("const_cols", [0, 1], ids=["width-passed", "width-compiled-in"])
def test_kernel_matches_its_semantics(name: str, dtype: torch.dtype, with_residual: bool, static: bool,
                                      one_pass: bool, rows: int, width: int, const_cols: int) -> None:
    generator = torch.Generator().manual_seed(rows * width)
    x = (3 * torch.randn(rows, width, generator=generator)).to(dtype)
    weight = torch.randn(width, generator=generator).to(dtype)
    residual = torch.randn(rows, width, generator=generator).to(dtype) if with_residual else None
    scale = torch.tensor([0.004], dtype=torch.float32) if static else None  # some values saturate
    cfg = dict(KERNEL.TUNABLES, EXACT_DIV=1, ONE_PASS=one_pass, BLOCK_N=256, CONST_COLS=const_cols)
    got = KERNEL.launch_rms_norm_quant_fp8(x, weight, 1e-6, name, residual, scale, cfg)
    got = list(got) if isinstance(got, tuple) else [got]
    want = _reference(x, weight, 1e-6, name, residual, scale)
    assert [(t.dtype, t.shape) for t in got] == [(t.dtype, t.shape) for t in want]
    steps = _code_steps(got[0], want[0])
    # the sum of squares is reduced in another order than torch's: a normalised value one fp32 ulp apart may
    # round to the neighbouring fp8 code (never further)
    assert int(steps.max()) <= 1 and int((steps > 0).sum()) <= max(2, steps.numel() // 100)
    if not static:
        torch.testing.assert_close(got[1], want[1], rtol=2 ** -7 if dtype == torch.bfloat16 else 1e-6, atol=0)
    if with_residual:
        assert torch.equal(got[-1], want[-1])  # the rounded sum, bit for bit (bf16 rounds to nearest even)
    if static:
        magnitudes = [(t.view(torch.uint8) & 0x7F).max().item() for t in (want[0], got[0])]
        assert magnitudes[0] in (0x7E, 0x7F) and magnitudes[1] == magnitudes[0]  # saturated at the largest value


def test_all_zero_rows_get_scale_one_and_zero_codes() -> None:
    x = torch.zeros(3, 40)
    x[1] = torch.linspace(-1, 1, 40)
    q, scale = KERNEL.Model(out_dtype="float8_e4m3fnuz")(x, torch.ones(40))
    assert scale[0].item() == 1.0 and scale[2].item() == 1.0 and scale[1].item() != 1.0
    assert not q[0].view(torch.uint8).any() and not q[2].view(torch.uint8).any()  # +0, never 0x80 (NaN)


def test_arguments_that_do_not_fit_are_one_line() -> None:
    with pytest.raises(ValueError, match="float8_e4m3fn or float8_e4m3fnuz"):
        KERNEL.Model(out_dtype="bfloat16")
    with pytest.raises(ValueError, match="weight has 8 elements for rows of 16"):
        KERNEL.Model()(torch.randn(2, 16), torch.randn(8))
    with pytest.raises(ValueError, match="residual"):
        KERNEL.Model()(torch.randn(2, 16), torch.randn(16), residual=torch.randn(3, 16))
    with pytest.raises(ValueError, match="static scale"):
        KERNEL.Model()(torch.randn(2, 16), torch.randn(16), scale=torch.ones(2))
