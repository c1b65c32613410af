"""The output comparison: structure, dtype, NaN/Inf, all-zero, integer exactness, mismatch budget."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.tolerance import Tolerance, compare_outputs, default_tolerance, scaled_to


def _cmp(cand, ref, tol=Tolerance(1e-3, 1e-3), frac=0.0):  # type: ignore[no-untyped-def]  # noqa: B008 (a frozen value)
    return compare_outputs(cand, ref, ref, lambda d: tol, frac)


def test_close_values_pass_and_report_errors() -> None:
    ref = torch.linspace(-1, 1, 100)
    result = _cmp(ref + 1e-5, ref)
    assert result.ok and result.max_abs_error is not None and result.max_abs_error < 2e-5


def test_out_of_tolerance_fails_with_location() -> None:
    ref = torch.ones(10)
    cand = ref.clone()
    cand[3] = 1.5
    result = _cmp(cand, ref)
    assert not result.ok and "flat index 3" in result.reason and "10.00%" in result.reason


def test_mismatch_budget() -> None:
    ref = torch.ones(1000)
    cand = ref.clone()
    cand[:2] = 2.0
    assert _cmp(cand, ref, frac=0.005).ok
    assert not _cmp(cand, ref, frac=0.001).ok


def test_nan_where_reference_finite_fails() -> None:
    ref = torch.ones(4)
    cand = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    assert "NaN/Inf" in _cmp(cand, ref).reason


def test_matching_infinities_pass() -> None:
    ref = torch.tensor([1.0, float("-inf"), 2.0])
    assert _cmp(ref.clone(), ref).ok
    assert not _cmp(torch.tensor([1.0, 0.0, 2.0]), ref).ok


def test_an_unreproduced_nan_is_counted_and_located() -> None:
    """Which reference NaN/Inf the candidate missed, and what it wrote there (an fp8 value at the format's
    largest finite magnitude where the reference overflowed reads differently from a zero)."""
    ref = torch.tensor([1.0, float("nan"), 2.0, float("inf"), float("nan")])
    cand = torch.tensor([1.0, float("nan"), 2.0, 240.0, 0.0])
    reason = _cmp(cand, ref).reason
    assert "not reproduced at 2 of 3" in reason and "flat index 3: got 240" in reason and "expected inf" in reason


def test_all_zero_output_fails_even_within_atol() -> None:
    ref = torch.full((8,), 1e-4)
    result = _cmp(torch.zeros(8), ref, tol=Tolerance(1e-3, 0.0))
    assert not result.ok and "all-zero" in result.reason


def test_shape_dtype_structure_mismatches() -> None:
    ref = torch.ones(2, 3)
    assert "shape" in _cmp(torch.ones(3, 2), ref).reason
    assert "dtype" in _cmp(torch.ones(2, 3, dtype=torch.float64), ref).reason
    assert "structure" in _cmp((ref,), ref).reason
    assert "structure" in _cmp({"a": ref}, {"b": ref}).reason


def test_integer_outputs_must_match_exactly() -> None:
    ref = torch.arange(10, dtype=torch.int32)
    cand = ref.clone()
    cand[9] = 8
    assert "integer" in _cmp(cand, ref).reason


def test_tensor_subclass_rejected() -> None:
    class Sneaky(torch.Tensor):
        pass

    ref = torch.ones(3)
    assert "not a plain torch.Tensor" in _cmp(ref.clone().as_subclass(Sneaky), ref).reason


def test_output_containers_must_be_plain_and_are_never_run() -> None:
    """A container subclass, an object spoofing `__class__`, or a dict key of its own type would run the candidate's
    code while the harness reads the outputs; none of it may run."""
    ran: list[str] = []
    a = torch.ones(3)

    class LazyTuple(tuple):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            ran.append("iter")
            return super().__iter__()

    class Spoof:
        __class__ = tuple  # type: ignore[assignment]

        def __len__(self) -> int:
            ran.append("len")
            return 1

    class Key(str):
        def __str__(self) -> str:
            ran.append("str")
            return "y"

        __hash__ = str.__hash__

    assert "not a plain tuple, list or dict" in _cmp(LazyTuple((a.clone(),)), (a,)).reason
    assert "not a plain tuple, list or dict" in _cmp(Spoof(), (a,)).reason
    assert "keys" in _cmp({Key("y"): a.clone()}, {"y": a}).reason
    assert ran == []
    # torch's own named tuples are plain enough (a reference may return torch.topk's); a look-alike is not
    values = torch.tensor([3.0, 1.0, 2.0])
    assert _cmp(torch.topk(values, 2), tuple(torch.topk(values, 2))).ok

    class topk(tuple):  # type: ignore[type-arg]  # noqa: N801 - borrows the name of torch.return_types.topk
        __module__ = "torch.return_types"

    assert "not a plain tuple" in _cmp(topk(torch.topk(values, 2)), tuple(torch.topk(values, 2))).reason
    assert _cmp([a.clone()], (a,)).ok and _cmp({"y": a.clone()}, {"y": a}).ok


def test_fp64_values_with_native_structure() -> None:
    native = torch.tensor([1.0, 2.0], dtype=torch.float16)
    exact = torch.tensor([1.0001, 2.0001], dtype=torch.float64)
    assert compare_outputs(native.clone(), native, exact, default_tolerance, 0.0).ok


def test_tuple_outputs_checked_leaf_by_leaf() -> None:
    a, b = torch.ones(3), torch.zeros(2, dtype=torch.int64)
    assert _cmp((a.clone(), b.clone()), (a, b)).ok
    assert "out[1]" in _cmp((a.clone(), b + 1), (a, b)).reason


def test_chunked_comparison_counts_and_locates_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large outputs are compared chunk by chunk; the verdict and the first wrong index do not change."""
    import aka_tui.bench.problem.tolerance as tolerance

    ref = torch.linspace(1, 2, 1000, dtype=torch.float32).reshape(10, 100)
    cand = ref.clone()
    cand[7, 3] += 1.0
    whole = compare_outputs(cand, ref, ref, lambda _: Tolerance(1e-4, 1e-4), 0.0)
    monkeypatch.setattr(tolerance, "COMPARE_CHUNK_ELEMENTS", 64)
    chunked = compare_outputs(cand, ref, ref, lambda _: Tolerance(1e-4, 1e-4), 0.0)
    assert not whole.ok and chunked.reason == whole.reason and "flat index 703" in chunked.reason
    zeros = compare_outputs(torch.zeros_like(ref), ref, ref, lambda _: Tolerance(1e-4, 1e-4), 1.0)
    assert "all-zero" in zeros.reason


def test_outputs_far_below_the_absolute_tolerance_are_still_compared() -> None:
    """An MoE layer's output (RMS ~0.005) under atol 0.02: any values of that size used to pass. The absolute
    part now shrinks with the output's RMS; an honest result's rounding still passes."""
    torch.manual_seed(0)
    reference = torch.randn(256, 64, dtype=torch.float64) * 0.005
    unrelated = torch.randn(256, 64, dtype=torch.float64).abs() * 0.0007  # e.g. another kernel's scales
    rounded = reference.to(torch.bfloat16).to(torch.float64)
    tol = lambda dtype: Tolerance(0.02, 0.02)  # noqa: E731
    assert not compare_outputs(unrelated, reference, reference, tol, 0.0).ok
    assert compare_outputs(rounded, reference, reference, tol, 0.0).ok
    # unit-scale outputs keep the written tolerance; an all-zero reference keeps a floor, not exact zeros
    assert scaled_to(Tolerance(0.02, 0.02), 1.3) == Tolerance(0.02, 0.02)
    assert scaled_to(Tolerance(0.02, 0.02), 0.0).atol == pytest.approx(2e-5)


def test_an_fp8_output_is_compared_with_the_float64_reference_rounded_to_its_format() -> None:
    from aka_tui.bench.problem.tolerance import Tolerance, compare_outputs

    exact = torch.tensor([1.0, 250.0, -3.0, 0.3], dtype=torch.float64)  # 250 is NaN in e4m3fnuz
    native = exact.to(torch.float8_e4m3fnuz)
    assert torch.isnan(native.to(torch.float32)[1])

    def tol(dtype: torch.dtype) -> Tolerance:
        return Tolerance(0.125, 0.125)

    assert compare_outputs(native.clone(), native, exact, tol, 0.0).ok  # a faithful kernel: NaN where the format has it
    off = torch.tensor([1.0, 250.0, -2.0, 0.3]).to(torch.float8_e4m3fnuz)
    assert not compare_outputs(off, native, exact, tol, 0.0).ok


def _fnuz(values: list[float]) -> torch.Tensor:
    return torch.tensor(values).to(torch.float8_e4m3fnuz)


def _fp8_tol(dtype: torch.dtype) -> Tolerance:
    return Tolerance(0.125, 0.125)


def test_the_largest_code_matches_a_reference_that_overflowed_by_less_than_the_tolerance() -> None:
    """A sum a few ulps below the overflow threshold (248 in e4m3fnuz) lands on 240 where the float64
    reference's 250 rounds to NaN: one code apart, as the tolerance allows anywhere else. Saturating a value
    far past the range, or with the wrong sign, still fails."""
    exact = torch.tensor([1.0, 250.0, -3.0, -251.0], dtype=torch.float64)
    native = exact.to(torch.float8_e4m3fnuz)
    assert compare_outputs(_fnuz([1.0, 240.0, -3.0, -240.0]), native, exact, _fp8_tol, 0.0).ok
    wrong_sign = compare_outputs(_fnuz([1.0, -240.0, -3.0, -240.0]), native, exact, _fp8_tol, 0.0)
    assert not wrong_sign.ok and "not reproduced at 1 of 2" in wrong_sign.reason
    far = torch.tensor([1.0, 400.0, -3.0, -251.0], dtype=torch.float64)
    assert not compare_outputs(_fnuz([1.0, 240.0, -3.0, -240.0]), far.to(torch.float8_e4m3fnuz), far,
                               _fp8_tol, 0.0).ok
    assert not compare_outputs(_fnuz([1.0, 224.0, -3.0, -240.0]), native, exact, _fp8_tol, 0.0).ok


def test_without_the_float64_reference_an_overflow_code_is_matched_by_the_largest_code_only() -> None:
    """A native reference's NaN in a format without infinity: only +-max (the nearest code) matches it.
    Where the format has infinity, +-max matches an inf of the same sign, and a NaN must be reproduced."""
    native = _fnuz([1.0, 300.0, -3.0])  # NaN at 1
    assert compare_outputs(_fnuz([1.0, -240.0, -3.0]), native, native, _fp8_tol, 0.0).ok
    assert not compare_outputs(_fnuz([1.0, 224.0, -3.0]), native, native, _fp8_tol, 0.0).ok
    top = torch.finfo(torch.bfloat16).max
    ref = torch.tensor([1.0, float("inf"), float("-inf"), float("nan")], dtype=torch.bfloat16)
    bf = Tolerance(0.02, 0.02)
    assert _cmp(torch.tensor([1.0, top, -top, float("nan")], dtype=torch.bfloat16), ref, tol=bf).ok
    assert not _cmp(torch.tensor([1.0, -top, -top, float("nan")], dtype=torch.bfloat16), ref, tol=bf).ok
    assert not _cmp(torch.tensor([1.0, top, -top, top], dtype=torch.bfloat16), ref, tol=bf).ok


def test_an_overflow_code_matches_a_reference_at_the_largest_code_when_the_threshold_is_within_tolerance() -> None:
    """The mirror of the rule above: a faithful sum a few ulps past 248 is NaN in e4m3fnuz where the reference's,
    a few ulps below, rounded to 240 (a published fp8 MoE layer, H200). Checked against the float64 reference
    where there is one, and only at +-max: a NaN anywhere else, or at 240 in a tight tolerance far below the
    threshold, is a wrong element."""
    exact = torch.tensor([1.0, 247.9, -3.0, -247.5], dtype=torch.float64)
    native = exact.to(torch.float8_e4m3fnuz)
    assert native.float().tolist() == [1.0, 240.0, -3.0, -240.0]
    nan = float("nan")
    result = compare_outputs(_fnuz([1.0, nan, -3.0, nan]), native, exact, _fp8_tol, 0.0)
    assert result.ok and result.max_abs_error == 0.0, result
    assert compare_outputs(_fnuz([1.0, nan, -3.0, -240.0]), native, native, _fp8_tol, 0.0).ok  # native reference
    inside = compare_outputs(_fnuz([nan, 240.0, -3.0, -240.0]), native, exact, _fp8_tol, 0.0)
    assert not inside.ok and "1 NaN/Inf elements" in inside.reason
    below = torch.tensor([1.0, 236.0, -3.0, -240.0], dtype=torch.float64)
    tight = compare_outputs(_fnuz([1.0, nan, -3.0, -240.0]), below.to(torch.float8_e4m3fnuz), below,
                            lambda dtype: Tolerance(0.01, 0.01), 0.0)
    assert not tight.ok and "NaN/Inf" in tight.reason


def test_an_infinity_matches_a_reference_at_the_largest_code_of_its_sign() -> None:
    """Where the format has infinity (e5m2, bf16), the overflow code is an inf of the reference's sign; in e4m3fn,
    whose cast saturates, a NaN is never an overflow."""
    top = torch.finfo(torch.float8_e5m2).max
    ref = torch.tensor([1.0, top, -top]).to(torch.float8_e5m2)
    assert compare_outputs(torch.tensor([1.0, float("inf"), float("-inf")]).to(torch.float8_e5m2), ref, ref,
                           _fp8_tol, 0.0).ok
    assert not compare_outputs(torch.tensor([1.0, float("-inf"), -top]).to(torch.float8_e5m2), ref, ref,
                               _fp8_tol, 0.0).ok
    fn = torch.tensor([1.0, 448.0]).to(torch.float8_e4m3fn)
    assert not compare_outputs(torch.tensor([1.0, float("nan")]).to(torch.float8_e4m3fn), fn, fn, _fp8_tol, 0.0).ok


def test_a_nan_in_e4m3fn_is_never_an_overflow() -> None:
    """torch's e4m3fn cast saturates at +-448 (it has no overflow code), so a NaN in such a reference is a
    true NaN: the largest code does not stand in for it."""
    assert torch.tensor([1e6]).to(torch.float8_e4m3fn).float().item() == 448.0
    ref = torch.tensor([1.0, float("nan")]).to(torch.float8_e4m3fn)
    cand = torch.tensor([1.0, 448.0]).to(torch.float8_e4m3fn)
    assert not compare_outputs(cand, ref, ref, _fp8_tol, 0.0).ok
    assert compare_outputs(ref.clone(), ref, ref, _fp8_tol, 0.0).ok


def _rows_of_two_scales(rows: int = 1024, width: int = 64) -> torch.Tensor:
    """Four rows of unit scale above many of scale 0.005 (causal attention: the first queries average a few
    values, the last ones thousands): the output's RMS is 0.0625."""
    torch.manual_seed(0)
    reference = torch.randn(rows, width, dtype=torch.float64) * 0.005
    reference[:4] = torch.randn(4, width, dtype=torch.float64)
    return reference


def test_a_row_of_larger_scale_is_held_to_its_own_scale_not_the_outputs() -> None:
    """atol 0.005 written for unit scale; scaled by the output's RMS (0.0625) it is 0.0031, below an error of
    0.004 on a row of scale 1, which that row's own scale allows. Rows of small scale keep the scaled atol."""
    reference = _rows_of_two_scales()
    tol = lambda dtype: Tolerance(0.005, 0.0)  # noqa: E731
    off_big = reference.clone()
    off_big[0] += 0.004
    assert compare_outputs(off_big, reference, reference, tol, 0.0).ok
    off_small = reference.clone()
    off_small[100] += 0.004
    result = compare_outputs(off_small, reference, reference, tol, 0.0)
    assert not result.ok and "per row" in result.reason
    too_far = reference.clone()
    too_far[0] += 0.006  # past the written atol, whatever the row's scale
    assert not compare_outputs(too_far, reference, reference, tol, 0.0).ok


def test_short_last_dimensions_are_judged_by_the_outputs_scale_alone() -> None:
    reference = _rows_of_two_scales().reshape(-1, 4)  # rows of 4 elements are no rows
    off = reference.clone()
    off[0] += 0.004
    assert not compare_outputs(off, reference, reference, lambda dtype: Tolerance(0.005, 0.0), 0.0).ok


def test_sampled_checks_hold_rows_to_the_same_atol_as_the_full_comparison() -> None:
    from aka_tui.bench.measure.samples import Sampler, failing_calls

    reference = _rows_of_two_scales()
    sampler = Sampler(reference, reference.numel(), lambda j: 0)  # every position sampled
    off_big = reference.clone()
    off_big[0] += 0.004
    expected, got = sampler.take(reference), sampler.take(off_big)
    tol = lambda dtype: Tolerance(0.005, 0.0)  # noqa: E731
    assert failing_calls([got], expected, tol, 0.0, sampler.row_rms()) == []
    assert failing_calls([got], expected, tol, 0.0) != []  # by the output's scale alone it would fail
    off_small = reference.clone()
    off_small[100] += 0.004
    assert failing_calls([sampler.take(off_small)], expected, tol, 0.0, sampler.row_rms()) != []
