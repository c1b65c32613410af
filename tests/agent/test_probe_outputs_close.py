"""The transfer search's output comparison (`outputs_close`): bit-identical outputs pass at once, in every float
width (fp8 included, NaN and inf where the reference has them); anything else is held to the tolerance, with
NaN, inf and all-zero outputs where the reference has them and nowhere else."""

from __future__ import annotations

import pytest
import torch

from aka_tui.agent.probe import outputs_close


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.bfloat16, torch.float16, torch.float32,
                                   torch.float64])
def test_identical_outputs_pass_in_every_float_width(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 33).to(dtype)
    if dtype.itemsize > 1:
        x[3, 4], x[5, 6] = float("nan"), float("inf")
    assert outputs_close(x, x.clone(), 1e-3, 1e-3)
    assert outputs_close(x.t(), x.clone().t(), 1e-3, 1e-3)  # strided views compare by value


def test_values_are_held_to_the_tolerance_on_all_but_the_allowed_fraction() -> None:
    torch.manual_seed(0)
    e = torch.randn(100, 100)
    near = e + 1e-4
    assert outputs_close(e, near, 1e-3, 1e-3)
    off = e.clone()
    off.view(-1)[:50] += 1.0  # 0.5% of the elements: within the 1% allowance
    assert outputs_close(e, off, 1e-3, 1e-3)
    off.view(-1)[:200] += 1.0  # 2%
    assert not outputs_close(e, off, 1e-3, 1e-3)
    assert not outputs_close(e, e.double(), 1e-3, 1e-3)  # dtype
    assert not outputs_close(e, e.reshape(10, 1000), 1e-3, 1e-3)  # shape


def test_nan_inf_and_zeros_must_be_where_the_reference_has_them() -> None:
    torch.manual_seed(0)
    e = torch.randn(50, 50)
    a = e.clone()
    a[0, 0] = float("nan")
    assert not outputs_close(e, a, 1e-3, 1e-3)
    e_nan = e.clone()
    e_nan[1, 1] = float("nan")
    near = e_nan + 1e-5
    assert outputs_close(e_nan, near, 1e-3, 1e-3)  # the same NaN, the rest close
    e_inf = e.clone()
    e_inf[2, 2] = float("inf")
    wrong_sign = e_inf + 1e-5
    wrong_sign[2, 2] = float("-inf")
    assert not outputs_close(e_inf, wrong_sign, 1e-3, 1e-3)
    zeros = torch.zeros(50, 50)
    assert not outputs_close(zeros, torch.full((50, 50), 1e-9), 1e-3, 1e-3)  # all zeros vs not


def test_fp8_codes_one_rounding_step_apart_are_the_same_value() -> None:
    torch.manual_seed(0)
    e = torch.randn(40, 40).to(torch.float8_e4m3fn)
    bumped = e.view(torch.uint8).clone()
    bumped[0, :5] += 1  # the next code up on a few elements
    assert outputs_close(e, bumped.view(torch.float8_e4m3fn), 1e-3, 1e-3)
    far = e.float() * 4
    assert not outputs_close(e, far.to(torch.float8_e4m3fn), 1e-3, 1e-3)


def test_integers_must_be_equal() -> None:
    ids = torch.arange(10)
    assert outputs_close(ids, ids.clone(), 0.0, 0.0)
    other = ids.clone()
    other[3] = 4
    assert not outputs_close(ids, other, 0.0, 0.0)
