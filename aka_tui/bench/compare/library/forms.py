"""PyTorch's fp8 GEMM forms: scaling granularity, API and scale layout, probed once per device (a form that runs
but reads its scales in another layout fails the probe too)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from aka_tui.bench.compare.library.results import short_error


@dataclass(frozen=True)
class ScaledMMForm:
    """A way to call PyTorch's fp8 GEMM: scaling granularity, API and scale layout."""

    kind: str  # "blockwise" (1x128 activations, 128x128 weights: the problem's layout) | "rowwise" | "tensorwise"
    api: str = "torch._scaled_mm"  # or "F.scaled_mm" (the newer API with explicit scaling recipes)
    layout: str = ""  # "padded-stride": weight scales with rows padded to a multiple of 4 (16-byte strides)

    @property
    def label(self) -> str:
        granularity = {"blockwise": "block-wise 1x128/128x128", "rowwise": "row-wise", "tensorwise": "tensor-wise"}
        return f"{self.api} {granularity[self.kind]}" + (f" ({self.layout})" if self.layout else "")

    @property
    def same_problem(self) -> bool:
        """True when the call computes the problem's own output (its scales); else coarser scales, same M, N, K."""
        return self.kind == "blockwise"


FP8_FORMS: tuple[ScaledMMForm, ...] = (
    ScaledMMForm("blockwise"), ScaledMMForm("blockwise", layout="padded-stride"),
    ScaledMMForm("blockwise", api="F.scaled_mm"), ScaledMMForm("blockwise", api="F.scaled_mm", layout="padded-stride"),
    ScaledMMForm("rowwise"), ScaledMMForm("tensorwise"),
)


@dataclass
class FormChoice:
    form: ScaledMMForm | None
    attempts: list[dict]


def select_scaled_mm_form(probe: Callable[[ScaledMMForm], tuple[bool, str]],
                          forms: Iterable[ScaledMMForm] = FP8_FORMS) -> FormChoice:
    """The first form whose probe passes (block-wise first, then row-wise, then tensor-wise), with every attempt.

    A probe returns (ok, reason); an exception from it counts as a failed probe (its first line is the reason).
    """
    attempts: list[dict] = []
    for form in forms:
        try:
            ok, reason = probe(form)
        except Exception as exc:  # an unsupported form raises from inside PyTorch: that is the answer
            ok, reason = False, short_error(exc)
        attempts.append({"form": form.label, "ok": bool(ok), "reason": reason})
        if ok:
            return FormChoice(form, attempts)
    return FormChoice(None, attempts)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def scaled_mm_scales(form: ScaledMMForm, a_scale: torch.Tensor, b_scale: torch.Tensor, n: int,
                     group: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """(scale_a, scale_b) for `_scaled_mm(a, b.t(), ...)` from the problem's a_scale [M, kg] and b_scale [ng, kg]."""
    a_scale, b_scale = a_scale.float(), b_scale.float()
    if form.kind == "blockwise":
        sa = a_scale.t().contiguous().t()  # [M, kg], outer-dim-major (stride (1, M))
        if form.layout == "padded-stride":
            ng, kg = b_scale.shape
            buf = b_scale.new_zeros(ng, _round_up(kg, 4))
            buf[:, :kg] = b_scale
            return sa, buf[:, :kg].t()
        return sa, b_scale.contiguous().t()  # [kg, ng] view; its .t() is the [ng, kg] row-major problem layout
    if form.kind == "rowwise":
        row_b = b_scale.amax(dim=1).repeat_interleave(group)[:n]
        return a_scale.amax(dim=1, keepdim=True).contiguous(), row_b.view(1, n).contiguous()
    return a_scale.max().reshape(()).clone(), b_scale.max().reshape(()).clone()


def problem_scales_for(form: ScaledMMForm, a_scale: torch.Tensor,
                       b_scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The problem-layout scales that a form's call applies (its own reference is the problem's on these)."""
    if form.kind == "blockwise":
        return a_scale, b_scale
    if form.kind == "rowwise":
        return (a_scale.amax(dim=1, keepdim=True).expand_as(a_scale).contiguous(),
                b_scale.amax(dim=1, keepdim=True).expand_as(b_scale).contiguous())
    return torch.full_like(a_scale, float(a_scale.max())), torch.full_like(b_scale, float(b_scale.max()))


def call_scaled_mm(form: ScaledMMForm, a: torch.Tensor, bt: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor,
                   out_dtype: torch.dtype) -> torch.Tensor:
    if form.api == "F.scaled_mm":
        scaling = F.ScalingType  # type: ignore[attr-defined]  # absent before PyTorch 2.10: the probe fails
        return F.scaled_mm(a, bt, sa, scaling.BlockWise1x128,  # type: ignore[attr-defined]
                           sb, scaling.BlockWise128x128, output_dtype=out_dtype)
    return torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=out_dtype)


def dequant_matmul(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor,
                    group: int = 128) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    sa = a_scale.float().repeat_interleave(group, dim=1)[:, :k]
    sb = b_scale.float().repeat_interleave(group, dim=0)[:n].repeat_interleave(group, dim=1)[:, :k]
    return (a.float() * sa) @ (b.float() * sb).t()


def probe_scaled_mm(form: ScaledMMForm, device: str, m: int = 128, n: int = 256, k: int = 512) -> tuple[bool, str]:
    """A tiny call of `form` with scales that differ per block, checked against the dequantised product: a form
    that runs but reads its scales in another layout fails here too. K is 4 groups of 128: cuBLAS's 128x128
    block scales pad the K-group count to a multiple of 4 (with 3 groups the call runs and reads the wrong
    scales, seen on the H200 with torch 2.11); every call at a real shape is checked against the reference too."""
    gen = torch.Generator(device="cpu").manual_seed(1234)
    kg, ng = -(-k // 128), -(-n // 128)
    a = torch.randn(m, k, generator=gen).to(torch.float8_e4m3fn).to(device)
    b = (torch.randn(n, k, generator=gen) * k ** -0.5).to(torch.float8_e4m3fn).to(device)
    a_scale = (0.5 + 1.5 * torch.rand(m, kg, generator=gen)).to(device)
    b_scale = (0.5 + 1.5 * torch.rand(ng, kg, generator=gen)).to(device)
    sa, sb = scaled_mm_scales(form, a_scale, b_scale, n)
    out = call_scaled_mm(form, a, b.t(), sa, sb, torch.bfloat16).float()
    applied_a, applied_b = problem_scales_for(form, a_scale, b_scale)
    ref = dequant_matmul(a, applied_a, b, applied_b)
    if tuple(out.shape) != (m, n):
        return False, f"output shape {tuple(out.shape)}, expected {(m, n)}"
    err = (out - ref).abs()
    bad = err > 0.05 + 0.02 * ref.abs()
    if bool(bad.any()):
        return False, f"runs but disagrees with the dequantised product (max abs err {float(err.max()):.3g})"
    return True, "ok"
