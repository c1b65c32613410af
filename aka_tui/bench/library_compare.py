"""Our kernels against the vendor library on the same problem, side by side in one run (issue 8's bars).

For each compared op and selected shape: our side is the candidate's `Model` (the KB reference kernel, loaded
as `aka bench --candidates kb/family` loads it) on the problem's inputs; the library side is the same logical
problem through PyTorch's library path:

- gemm_bf16_linear_epilogue: `torch.matmul(x, w.t())` alone (cuBLAS; the issue's bar) and `F.linear` plus the
  epilogue in torch (context);
- gemm_fp8_blockscale: `torch._scaled_mm` at the same M, N, K in float8_e4m3fn, with the problem's block-wise
  scales where this PyTorch supports them, else row-wise, else tensor-wise scales (a throughput bar at the
  same M, N, K; the form used is recorded);
- attention_prefill_varlen: causal `F.scaled_dot_product_attention` formulations of the packed batch
  (SDPA's flash kernel on the packed batch, nested jagged tensors, one call per length group, one padded
  call; the fastest that agrees with the reference is the bar), with the backend that ran.

Every formulation is checked against the problem's reference within the problem's tolerance before it is
timed; a disagreement is reported instead of a ratio. Our side goes through the evaluator's measurement engine
(`aka_tui.bench.measure`: its checked case, its timing protocol with the timed calls verified); the library side
through the same timing protocol (`time_cuda`). Both time the evaluator's case inputs with one
`Timers.capture()`, interleaved (ours, library, ours, library, ... for `rounds` rounds), the median of the
per-round medians per side, under the per-GPU lock. Each side's `status` uses the engine's verdicts. Layout preparation for the library
(views, transposes, padding, stacked or expanded K/V heads, scale layouts) happens outside the timed call:
the library is timed on the layout it likes best, so the bar errs on the library's side.

Only torch, triton and numpy are imported (the device machine runs this from the checkout).
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import secrets
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F

from aka_tui.bench.audit import TritonLaunchRecorder
from aka_tui.bench.measure.calls import MeasureFailure, run_calls
from aka_tui.bench.measure.cases import ShapeCases, case_seeds
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.session import build_candidate_model
from aka_tui.bench.measure.verdicts import PASSED
from aka_tui.bench.problem import Problem, Shape, Suite
from aka_tui.bench.seeds import derive_seed
from aka_tui.bench.timing import Timers, time_cpu, time_cuda
from aka_tui.bench.tolerance import compare_outputs
from aka_tui.errors import EvaluationError

SCHEMA = "aka-library-compare/1"
TARGETS = {"gemm_bf16_linear_epilogue": 0.80, "gemm_fp8_blockscale": 0.80, "attention_prefill_varlen": 0.70}
SHAPE_SETS = ("largest", "weighted", "all")
EXACT_FLOP_LIMIT = 5e10  # float64 reference up to this many FLOPs per shape, the native reference above it
DRY_RUN_NOTE = ("dry-run on the CPU with the Triton interpreter: the plumbing is exercised, the timings and "
                "ratios are meaningless")
GPU_REQUIRED = ("aka bench --library-compare needs a CUDA GPU (torch sees none); `--device cpu --tier smoke` runs "
                "a plumbing dry-run on the Triton interpreter (timings meaningless)")


# --------------------------------------------------------------------------------------------- plans

@dataclass
class LibraryPlan:
    """One library formulation of a shape: how to lay out the inputs (untimed), what to time, how to read back.

    `reference_init` / `reference_inputs`: the problem reference this formulation must agree with, when it is
    not the shape's own (the bare GEMM: the reference without epilogue; coarser fp8 scales: the reference on
    those scales); None means the shape's reference on the shape's inputs.
    """

    label: str
    flops: float
    prepare: Callable[[dict], dict]
    call: Callable[[dict], Any]
    output: Callable[[dict, Any], Any] = lambda prepared, result: result
    reference_init: dict | None = None
    reference_inputs: Callable[[dict], dict] | None = None
    details: dict = field(default_factory=dict)
    describe: Callable[[dict], dict] | None = None  # extra details from one untimed call (the SDPA backend)
    unavailable: str = ""  # non-empty: known not to run here (the reason), recorded without trying


@dataclass
class PlanGroup:
    """Alternative formulations of one library side; `select` "first" (first that runs and agrees, in order)
    or "fastest" (the fastest of those that do, by a short timing)."""

    role: str  # "bar" (the bar) | "context"
    title: str
    alternatives: list[LibraryPlan]
    select: str = "first"


# ------------------------------------------------------------------------------------- fp8 scaled_mm forms

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
            ok, reason = False, _short(exc)
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


def _dequant_matmul(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor,
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
    ref = _dequant_matmul(a, applied_a, b, applied_b)
    if tuple(out.shape) != (m, n):
        return False, f"output shape {tuple(out.shape)}, expected {(m, n)}"
    err = (out - ref).abs()
    bad = err > 0.05 + 0.02 * ref.abs()
    if bool(bad.any()):
        return False, f"runs but disagrees with the dequantised product (max abs err {float(err.max()):.3g})"
    return True, "ok"


# ------------------------------------------------------------------------------------------ op plans

def _gemm_bf16_groups(shape: Shape, inputs: dict, ctx: _Context) -> list[PlanGroup]:
    m, k = inputs["x"].shape
    n = inputs["w"].shape[0]
    kw = shape.init_kwargs
    act, has_bias, has_res = kw.get("activation", "none"), bool(kw.get("has_bias")), bool(kw.get("has_residual"))
    bare = LibraryPlan(
        "torch.matmul (cuBLAS GEMM alone)", 2.0 * m * n * k,
        prepare=lambda i: {"x": i["x"], "w": i["w"]},
        call=lambda p: torch.matmul(p["x"], p["w"].t()),
        reference_init={"activation": "none", "has_bias": False, "has_residual": False},
        reference_inputs=lambda i: {"x": i["x"], "w": i["w"]},
        details={"what": "x @ w^T in the input dtype, no epilogue; FLOPs 2*M*N*K"})
    groups = [PlanGroup("bar", "torch.matmul", [bare])]
    if act != "none" or has_bias or has_res:
        def epilogue(p: dict) -> torch.Tensor:
            z = F.linear(p["x"], p["w"], p.get("bias"))  # bias fused by cuBLASLt
            if act == "gelu_tanh":
                z = F.gelu(z, approximate="tanh")
            elif act == "silu":
                z = F.silu(z, inplace=True)
            if has_res:
                z += p["residual"]
            return z

        keep = ["x", "w"] + (["bias"] if has_bias else []) + (["residual"] if has_res else [])
        what = "F.linear" + (" with bias" if has_bias else "") + (f", {act}" if act != "none" else "") + \
               (", + residual" if has_res else "") + " in the input dtype"
        groups.append(PlanGroup("context", "F.linear + torch epilogue", [LibraryPlan(
            "F.linear + torch epilogue", ctx.flops(shape), prepare=lambda i: {key: i[key] for key in keep},
            call=epilogue, details={"what": what})]))
    return groups


def _gemm_fp8_groups(shape: Shape, inputs: dict, ctx: _Context) -> list[PlanGroup]:
    m, k = inputs["a"].shape
    n = inputs["b"].shape[0]
    group = int(shape.init_kwargs.get("group_size", 128))
    out_dtype = getattr(torch, shape.init_kwargs.get("out_dtype", "bfloat16"))
    probe = ctx.fp8_probe()
    passed = {a["form"] for a in probe.attempts if a["ok"]}
    plans = []
    for form in FP8_FORMS:
        if form.kind != "tensorwise" and group != 128:
            continue  # 1x128 / 128x128 blocks (and the row-wise broadcast of them) assume the 128 group
        reason = next((a["reason"] for a in probe.attempts if a["form"] == form.label and not a["ok"]), "")
        note = ("the problem's own scales: computes the problem's output" if form.same_problem else
                "coarser scales at the same M, N, K (same fp8 operands): a throughput bar; checked against the "
                "problem's reference computed with these coarser scales")

        def prepare(i: dict, form: ScaledMMForm = form) -> dict:
            sa, sb = scaled_mm_scales(form, i["a_scale"], i["b_scale"], n, group)
            return {"a": i["a"], "bt": i["b"].t(), "sa": sa, "sb": sb}

        def reference_inputs(i: dict, form: ScaledMMForm = form) -> dict:
            a_scale, b_scale = problem_scales_for(form, i["a_scale"], i["b_scale"])
            return {"a": i["a"], "a_scale": a_scale, "b": i["b"], "b_scale": b_scale}

        plans.append(LibraryPlan(
            form.label, 2.0 * m * n * k, prepare=prepare,
            call=lambda p, form=form: call_scaled_mm(form, p["a"], p["bt"], p["sa"], p["sb"], out_dtype),
            reference_inputs=None if form.same_problem else reference_inputs,
            details={"form": form.kind, "api": form.api, "layout": form.layout or "plain", "note": note},
            unavailable="" if form.label in passed else f"failed the probe: {reason}"))
    blockwise = [p for p in plans if p.details["form"] == "blockwise"]
    if any(not p.unavailable for p in blockwise):
        # The problem's own scaling is the bar; the coarser forms are context (what the scaling costs cuBLAS).
        coarser = [p for p in plans if p not in blockwise]
        return [PlanGroup("bar", "torch._scaled_mm", blockwise, select="first"),
                PlanGroup("context", "torch._scaled_mm, coarser scales", coarser, select="first")]
    return [PlanGroup("bar", "torch._scaled_mm", plans, select="first")]


_SDPA_OPS = (
    ("aten::_scaled_dot_product_cudnn_attention", "cudnn"), ("aten::_cudnn_attention_forward", "cudnn"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "flash (cpu)"),
    ("aten::_scaled_dot_product_flash_attention", "flash"), ("aten::_flash_attention_forward", "flash"),
    ("aten::_scaled_dot_product_efficient_attention", "efficient"), ("aten::_efficient_attention_forward", "efficient"),
    ("aten::_scaled_dot_product_attention_math", "math"),
)


def sdpa_backend(fn: Callable[[dict], Any], prepared: dict) -> str:
    """Which SDPA backend(s) one call ran, from the aten ops the profiler saw ("unknown" if none matched)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(prepared)
    names = {event.name for event in prof.events()}
    found = sorted({label for op, label in _SDPA_OPS if op in names})
    return "+".join(found) or "unknown"


def _attention_groups(shape: Shape, inputs: dict, ctx: _Context) -> list[PlanGroup]:
    kw = shape.init_kwargs
    heads, kv_heads, dim = int(kw["num_heads"]), int(kw["num_kv_heads"]), int(kw["head_dim"])
    scale = float(kw["softmax_scale"]) if kw.get("softmax_scale") is not None else dim ** -0.5
    group = heads // kv_heads
    flops = ctx.flops(shape)
    lens = (inputs["cu_seqlens"][1:] - inputs["cu_seqlens"][:-1]).tolist()
    batch, longest = len(lens), max(lens)
    gqa_kw = {"enable_gqa": True} if group > 1 else {}

    def kv(t: torch.Tensor, expand: bool) -> torch.Tensor:
        return t.repeat_interleave(group, dim=1) if expand and group > 1 else t

    def describe(plan_call: Callable[[dict], Any]) -> Callable[[dict], dict]:
        return lambda prepared: {"sdpa_backend": sdpa_backend(plan_call, prepared)}

    def packed_out(prepared: dict, pieces: list[tuple[int, int, torch.Tensor]]) -> torch.Tensor:
        out = torch.empty(prepared["total"], heads, dim, dtype=prepared["dtype"], device=prepared["device"])
        for start, length, piece in pieces:  # piece [H, L, D]
            out[start:start + length] = piece.transpose(0, 1)
        return out

    plans: list[LibraryPlan] = []
    if ctx.device.startswith("cuda"):
        def varlen_prepare(i: dict) -> dict:
            lengths = (i["cu_seqlens"][1:] - i["cu_seqlens"][:-1]).tolist()
            return {"q": i["q"], "k": i["k"], "v": i["v"], "cu": i["cu_seqlens"].to(torch.int32),
                    "max": int(max(lengths))}

        plans.append(LibraryPlan(
            "SDPA flash kernel, varlen on the packed batch (aten::_flash_attention_forward)", flops,
            prepare=varlen_prepare,
            call=lambda p: torch.ops.aten._flash_attention_forward(
                p["q"], p["k"], p["v"], p["cu"], p["cu"], p["max"], p["max"], 0.0, True, False, scale=scale)[0],
            details={"strategy": "packed varlen, one launch, native GQA: the kernel SDPA's flash backend runs",
                     "sdpa_backend": "flash (called through its aten op)"}))

    for expand in (False, True):
        suffix = " (K/V heads expanded)" if expand else ""

        def nested_prepare(i: dict, expand: bool = expand) -> dict:
            offsets = i["cu_seqlens"].to(torch.int64)
            lengths = (offsets[1:] - offsets[:-1]).tolist()
            bounds = {"min_seqlen": int(min(lengths)), "max_seqlen": int(max(lengths))}

            def nt(t: torch.Tensor) -> torch.Tensor:
                return torch.nested.nested_tensor_from_jagged(t, offsets, **bounds).transpose(1, 2)
            return {"q": nt(i["q"]), "k": nt(kv(i["k"], expand)), "v": nt(kv(i["v"], expand))}

        def nested_call(p: dict, expand: bool = expand) -> Any:
            return F.scaled_dot_product_attention(p["q"], p["k"], p["v"], is_causal=True, scale=scale,
                                                  **({} if expand else gqa_kw))

        plans.append(LibraryPlan(
            "nested jagged SDPA" + suffix, flops, prepare=nested_prepare, call=nested_call,
            output=lambda p, r: r.transpose(1, 2).values().contiguous(),
            details={"strategy": "nested jagged tensors (one SDPA call; PyTorch runs a varlen kernel)"
                                 + ("; K/V heads expanded before timing" if expand else "")},
            describe=describe(nested_call)))

    for backend in ((None, "cudnn") if ctx.device.startswith("cuda") else (None,)):
        for expand in (False, True):
            forced = f" [{backend} forced]" if backend else ""
            suffix = " (K/V heads expanded)" if expand else ""

            def loop_prepare(i: dict, expand: bool = expand) -> dict:
                bounds = i["cu_seqlens"].tolist()
                by_len: dict[int, list[int]] = {}
                for start, end in zip(bounds[:-1], bounds[1:]):
                    if end > start:
                        by_len.setdefault(end - start, []).append(start)
                groups = []
                for length, starts in by_len.items():
                    def stack(t: torch.Tensor) -> torch.Tensor:
                        return torch.stack([t[s:s + length] for s in starts]).transpose(1, 2).contiguous()
                    groups.append((starts, length, stack(i["q"]), stack(kv(i["k"], expand)), stack(kv(i["v"], expand))))
                return {"groups": groups, "total": i["q"].shape[0], "dtype": i["q"].dtype, "device": i["q"].device}

            def loop_call(p: dict, expand: bool = expand, backend: str | None = backend) -> Any:
                def run() -> list[torch.Tensor]:
                    return [F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale,
                                                           **({} if expand else gqa_kw))
                            for _, _, q, k, v in p["groups"]]
                if backend is None:
                    return run()
                from torch.nn.attention import SDPBackend, sdpa_kernel

                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return run()

            def loop_out(p: dict, outs: list[torch.Tensor]) -> torch.Tensor:
                pieces = [(s, length, o[j]) for (starts, length, *_), o in zip(p["groups"], outs)
                          for j, s in enumerate(starts)]
                return packed_out(p, pieces)

            calls = len(set(lens))
            plans.append(LibraryPlan(
                f"SDPA per length group{forced}{suffix}", flops, prepare=loop_prepare, call=loop_call, output=loop_out,
                details={"strategy": f"one SDPA call per group of equal-length sequences ({calls} calls for {batch} "
                                     f"sequences: launch overhead included)"
                                     + ("; K/V heads expanded before timing" if expand else "")},
                describe=describe(loop_call)))
            if batch < 2:
                continue
            causal_work = sum(length * (length + 1) / 2 for length in lens)
            waste = batch * longest * (longest + 1) / 2 / causal_work

            def pad_prepare(i: dict, expand: bool = expand) -> dict:
                bounds = i["cu_seqlens"].tolist()
                starts = [(s, e - s) for s, e in zip(bounds[:-1], bounds[1:])]

                def pad(t: torch.Tensor) -> torch.Tensor:
                    out = t.new_zeros(batch, t.shape[1], longest, dim)
                    for b, (s, length) in enumerate(starts):
                        out[b, :, :length] = t[s:s + length].transpose(0, 1)
                    return out
                return {"q": pad(i["q"]), "k": pad(kv(i["k"], expand)), "v": pad(kv(i["v"], expand)), "starts": starts,
                        "total": i["q"].shape[0], "dtype": i["q"].dtype, "device": i["q"].device}

            def pad_call(p: dict, expand: bool = expand, backend: str | None = backend) -> Any:
                def run() -> torch.Tensor:
                    return F.scaled_dot_product_attention(p["q"], p["k"], p["v"], is_causal=True, scale=scale,
                                                          **({} if expand else gqa_kw))
                if backend is None:
                    return run()
                from torch.nn.attention import SDPBackend, sdpa_kernel

                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return run()

            plans.append(LibraryPlan(
                f"SDPA on a padded batch{forced}{suffix}", flops, prepare=pad_prepare, call=pad_call,
                output=lambda p, r: packed_out(p, [(s, length, r[b, :, :length])
                                                   for b, (s, length) in enumerate(p["starts"])]),
                details={"strategy": f"right-padded to {longest} tokens, one call ({waste:.2f}x the causal work; "
                                     "padded rows discarded)"
                                     + ("; K/V heads expanded before timing" if expand else "")},
                describe=describe(pad_call)))
    return [PlanGroup("bar", "F.scaled_dot_product_attention", plans, select="fastest")]


OP_GROUPS: dict[str, Callable[[Shape, dict, "_Context"], list[PlanGroup]]] = {
    "gemm_bf16_linear_epilogue": _gemm_bf16_groups,
    "gemm_fp8_blockscale": _gemm_fp8_groups,
    "attention_prefill_varlen": _attention_groups,
}


# --------------------------------------------------------------------------------------------- results

@dataclass
class SideResult:
    """One side of a comparison at one shape: our kernel, or one library formulation."""

    label: str
    role: str  # "ours" | "bar" | "context"
    flops: float
    check: str  # "ok", or why it is not compared
    verdict: str = ""  # the engine's vocabulary: "" while ok (passed), else wrong_output / runtime_error / tampered...
    max_abs_error: float | None = None
    median_ms: float | None = None
    round_ms: list[float] = field(default_factory=list)
    rounds: list[dict] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def tflops(self) -> float | None:
        if not self.ok or not self.median_ms:
            return None
        return self.flops / (self.median_ms * 1e-3) / 1e12

    @property
    def status(self) -> str:
        if self.ok:
            return PASSED
        return self.verdict or ("wrong_output" if self.check.startswith("disagrees") else "runtime_error")

    def to_json(self) -> dict:
        return asdict(self) | {"tflops": self.tflops, "status": self.status}


@dataclass
class ShapeComparison:
    op: str
    shape_id: str
    weight: float
    selected_as: list[str]
    target: float
    reference_precision: str
    ours: SideResult
    library: list[SideResult]

    def rows(self) -> list[dict]:
        out = []
        for lib in self.library:
            ratio = self.ours.tflops / lib.tflops if self.ours.tflops and lib.tflops else None
            if not self.ours.ok:
                status = f"ours: {self.ours.check}"
            elif not lib.ok:
                status = f"library: {lib.check}"
            else:
                status = ""
            out.append({"op": self.op, "shape": self.shape_id, "role": lib.role, "library": lib.label,
                        "ours_ms": self.ours.median_ms, "library_ms": lib.median_ms, "ours_tflops": self.ours.tflops,
                        "library_tflops": lib.tflops, "ratio": ratio, "target": self.target,
                        "met": None if ratio is None else ratio >= self.target, "status": status})
        return out

    def bar_ratio(self) -> float | None:
        rows = [r for r in self.rows() if r["role"] == "bar"]
        return rows[0]["ratio"] if rows else None

    def to_json(self) -> dict:
        return {"op": self.op, "shape_id": self.shape_id, "weight": self.weight, "selected_as": self.selected_as,
                "target": self.target, "reference_precision": self.reference_precision,
                "ours": self.ours.to_json(), "library": [s.to_json() for s in self.library], "rows": self.rows()}


@dataclass
class LibraryCompareReport:
    device: str
    device_name: str
    tier: str
    dry_run: bool
    rounds: int
    candidates_dir: str
    versions: dict
    fp8_probe: list[dict]
    comparisons: list[ShapeComparison]
    wall_s: float
    errors: dict[str, str] = field(default_factory=dict)
    created_unix: float = field(default_factory=time.time)

    def op_summary(self) -> list[dict]:
        """Per op: the bar ratio at the largest shape, and the weight-weighted geometric mean over weighted shapes."""
        summary = []
        for op in dict.fromkeys(c.op for c in self.comparisons):
            comps = [c for c in self.comparisons if c.op == op]
            largest = next((c for c in comps if "largest" in c.selected_as), None)
            weighted = [c for c in comps if c.weight > 0 and "weighted" in c.selected_as]
            ratios = [(c.weight, c.bar_ratio()) for c in weighted]
            geo = None
            if ratios and all(r is not None and r > 0 for _, r in ratios):
                total = sum(w for w, _ in ratios)
                geo = math.exp(sum(w * math.log(r) for w, r in ratios) / total)  # type: ignore[arg-type]
            large = largest.bar_ratio() if largest else None
            summary.append({"op": op, "target": TARGETS.get(op), "largest_shape": largest.shape_id if largest else None,
                            "largest_ratio": large, "largest_met": None if large is None else large >= TARGETS[op],
                            "weighted_geomean_ratio": geo,
                            "weighted_met": None if geo is None else geo >= TARGETS[op]})
        return summary

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "created_unix": self.created_unix, "device": self.device,
                "device_name": self.device_name, "tier": self.tier, "dry_run": self.dry_run,
                "note": DRY_RUN_NOTE if self.dry_run else "throughput bars at the same problem (docs/scoring.md)",
                "rounds": self.rounds, "candidates_dir": self.candidates_dir, "versions": self.versions,
                "targets": TARGETS, "fp8_probe": self.fp8_probe, "errors": self.errors, "wall_s": self.wall_s,
                "summary": self.op_summary(), "comparisons": [c.to_json() for c in self.comparisons]}


# ------------------------------------------------------------------------------------------------ run

def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:240] if text else ''}"


@dataclass
class _Context:
    """What one compared shape needs: the problem, its modules, the device and the shared probes."""

    problem: Problem
    ref_module: Any
    input_module: Any
    device: str
    probe_cache: dict

    def flops(self, shape: Shape) -> float:
        cached = self.problem.roofline.get(shape.shape_id)
        if cached is not None:
            return cached.flops
        from aka_tui.bench.inputs import make_inputs
        from aka_tui.bench.roofline import measure_entry

        seed = derive_seed(self.problem.name, shape.shape_id, 0, "roofline")
        entry = measure_entry(self.problem, shape, self.ref_module,
                              lambda: make_inputs(self.problem, self.input_module, shape, self.device, seed),
                              lambda: self.ref_module.Model(**shape.init_kwargs).to(self.device).eval())
        return entry.flops

    def fp8_probe(self) -> FormChoice:
        if "fp8" not in self.probe_cache:
            # Every form is probed (not only up to the first that works): a shape may need a later one.
            attempts = [select_scaled_mm_form(lambda f: probe_scaled_mm(f, self.device), [form]).attempts[0]
                        for form in FP8_FORMS]
            first = next((f for f, a in zip(FP8_FORMS, attempts) if a["ok"]), None)
            self.probe_cache["fp8"] = FormChoice(first, attempts)
        return self.probe_cache["fp8"]


def select_shapes(problem: Problem, tier: str, which: Iterable[str],
                  flops_of: Callable[[Shape], float]) -> list[tuple[Shape, list[str]]]:
    """The shapes to compare, in suite order, each with why it was selected (largest by FLOPs, weighted, all)."""
    shapes = problem.shapes_for(tier)
    if not shapes:
        return []
    reasons: dict[str, list[str]] = {}
    which = list(which)
    if "all" in which:
        for s in shapes:
            reasons.setdefault(s.shape_id, []).append("all")
    if "largest" in which:
        reasons.setdefault(max(shapes, key=flops_of).shape_id, []).append("largest")
    if "weighted" in which:
        for s in shapes:
            if s.weight > 0:
                reasons.setdefault(s.shape_id, []).append("weighted")
    return [(s, reasons[s.shape_id]) for s in shapes if s.shape_id in reasons]


def parse_shape_sets(text: str) -> list[str]:
    sets = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in sets if t not in SHAPE_SETS]
    if unknown or not sets:
        raise EvaluationError(f"--shapes takes a comma-separated list of {', '.join(SHAPE_SETS)}, not {text!r}")
    return sets


def resolve_run_device(device: str, tier: str | None) -> tuple[str, str]:
    """(device, tier): a CUDA GPU and the full tier by default; the CPU only as an explicit smoke dry-run."""
    has_cuda = torch.cuda.is_available()
    if device == "auto":
        device = "cuda" if has_cuda else "cpu-implicit"
    if device.startswith("cuda"):
        if not has_cuda:
            raise EvaluationError(GPU_REQUIRED)
        return device, tier or "full"
    if device in ("cpu", "cpu-implicit"):
        if device == "cpu" and tier == "smoke":
            return "cpu", "smoke"
        raise EvaluationError(GPU_REQUIRED)
    raise EvaluationError(f"unknown device {device!r}: use cuda, cuda:N, or cpu (with --tier smoke: a dry-run)")


def _l2_bytes(device: str, hardware: str | None) -> int:
    from aka_tui.bench.hardware import detect_profile, get_profile
    from aka_tui.errors import HardwareProfileError

    try:
        return (get_profile(hardware) if hardware else detect_profile(device)).l2_bytes
    except HardwareProfileError:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return int(getattr(props, "L2_cache_size", 0) or 64 << 20)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _ours_side(ctx: _Context, cases: ShapeCases, shape: Shape, cand_cls: Any, cand_label: str, flops: float,
               timers: Timers, l2_bytes: int, n_sets: int) -> tuple[SideResult, Callable[[], Any]]:
    """Our side: the candidate's Model as the evaluator builds it, checked by the engine; and how to time it
    (the engine's timing protocol with the timed calls verified, a fresh plan per round)."""
    ours = SideResult(f"ours: {cand_label}", "ours", flops, "ok")
    options = PlanOptions(ctx.device, audit=False, watch_threads=False, recheck=False, evidence=False, n_sets=n_sets,
                          cpu_reps=2, l2_bytes=l2_bytes)
    recorder = TritonLaunchRecorder()
    model: Any = None

    def plan() -> ShapePlan:
        return ShapePlan(ctx.problem, cases, options, timers, recorder)

    def time_ours() -> Any:
        with recorder.installed():
            return run_calls(model, plan().timing_only())

    try:
        model = build_candidate_model(cand_cls, shape, cases.ref_model, ctx.device)
        checked = plan()
        with recorder.installed():
            run_calls(model, checked.check_only(0))
        ours.max_abs_error = checked.result.max_abs
    except MeasureFailure as failure:
        ours.check, ours.verdict = f"{failure.error.kind}: {failure.error.message[:300]}", failure.error.kind
    except Exception as exc:
        ours.check, ours.verdict = f"error: {_short(exc)}", "runtime_error"
    return ours, time_ours


def _compare_shape(ctx: _Context, shape: Shape, selected_as: list[str], cand_cls: Any, cand_label: str,
                   timers: Timers, l2_bytes: int, rounds: int, exact_flop_limit: float,
                   log: Callable[[str], None]) -> ShapeComparison:
    from aka_tui.bench.inputs import clone_inputs, upcast_inputs

    problem, device = ctx.problem, ctx.device
    flops = ctx.flops(shape)
    exact = problem.fp64_reference and flops <= exact_flop_limit
    cuda = device.startswith("cuda")
    cases = ShapeCases(problem, shape, device, ctx.ref_module, ctx.input_module, case_seeds(problem, shape,
                       3 if cuda else 1), exact, 0, secrets.randbits(62))
    check_inputs = cases.case(0).inputs  # the evaluator's first correctness case, as before
    n_sets = cases.timing_sets(3 if cuda else 1, memory_fraction=0.125)
    references: dict[Any, tuple[Any, Any]] = {}

    def reference(init: dict | None, to_inputs: Callable[[dict], dict] | None) -> tuple[Any, Any]:
        key = (json.dumps(init, sort_keys=True) if init is not None else None, id(to_inputs) if to_inputs else None)
        if key not in references:
            kwargs = shape.init_kwargs if init is None else init
            inputs = to_inputs(check_inputs) if to_inputs else check_inputs
            native = ctx.ref_module.Model(**kwargs).to(device).eval()(**clone_inputs(inputs))
            exact_out = native
            if exact:
                exact_model = ctx.ref_module.Model(**kwargs).to(device).double().eval()
                exact_out = exact_model(**upcast_inputs(clone_inputs(inputs)))
            _sync(device)
            references[key] = (native, exact_out)
        return references[key]

    def check(out: Any, init: dict | None = None,
              to_inputs: Callable[[dict], dict] | None = None) -> tuple[str, float | None]:
        native, exact_out = reference(init, to_inputs)
        cmp = compare_outputs(out, native, exact_out, problem.tolerance_for, problem.max_mismatch_fraction)
        return ("ok" if cmp.ok else f"disagrees with the reference: {cmp.reason}"), cmp.max_abs_error

    def timed(fn: Callable[[dict], Any], sets: list[dict], quick: bool = False) -> Any:
        if device.startswith("cuda"):
            extra = {"target_ms": 50.0, "min_reps": 5, "max_reps": 50} if quick else {}
            return time_cuda(fn, sets, timers, l2_bytes, **extra)
        return time_cpu(fn, sets, timers, reps=1 if quick else 2)

    ours, time_ours = _ours_side(ctx, cases, shape, cand_cls, cand_label, flops, timers, l2_bytes, n_sets)
    log(f"  ours: {ours.check}")

    # Library side: each group's formulations, checked; the chosen one per group is timed.
    sides: list[tuple[SideResult, LibraryPlan | None]] = []
    for group in OP_GROUPS[problem.name](shape, check_inputs, ctx):
        attempts: list[dict] = []
        passing: list[tuple[LibraryPlan, dict, float | None]] = []
        for plan in group.alternatives:
            attempt: dict = {"label": plan.label}
            attempts.append(attempt)
            if plan.unavailable:
                attempt["check"] = plan.unavailable
                continue
            try:
                prepared = plan.prepare(check_inputs)
                out = plan.output(prepared, plan.call(prepared))
                _sync(device)
                attempt["check"], err = check(out, plan.reference_init, plan.reference_inputs)
                del out
                if plan.describe is not None:
                    attempt.update(plan.describe(prepared))
            except Exception as exc:
                attempt["check"] = f"error: {_short(exc)}"
                continue
            if attempt["check"] == "ok":
                passing.append((plan, prepared, err))
                if group.select == "first":
                    break
        chosen: tuple[LibraryPlan, dict, float | None] | None = passing[0] if passing else None
        if group.select == "fastest" and len(passing) > 1:
            by_label = {a["label"]: a for a in attempts}
            best = None
            for plan, prepared, err in passing:
                try:
                    ms = timed(plan.call, [prepared], quick=True).median_ms
                except Exception as exc:
                    by_label[plan.label]["check"] = f"error while timing: {_short(exc)}"
                    continue
                by_label[plan.label]["quick_ms"] = ms
                if best is None or ms < best[0]:
                    best = (ms, (plan, prepared, err))
            chosen = best[1] if best else None
        for attempt in attempts:
            log(f"  {group.title}: {attempt['label']}: {attempt['check']}"
                + (f" ({attempt['quick_ms']:.4f} ms)" if "quick_ms" in attempt else "")
                + (f" [backend {attempt['sdpa_backend']}]" if "sdpa_backend" in attempt else ""))
        if chosen is None:
            reasons = "; ".join(f"{a['label']}: {a['check']}" for a in attempts) or "no formulation applies"
            sides.append((SideResult(group.title, group.role, 0.0, f"no formulation ran and agreed ({reasons})"[:600],
                                     details={"alternatives": attempts}), None))
            continue
        plan, _, err = chosen
        chosen_attempt = next(a for a in attempts if a["label"] == plan.label)
        details = {**plan.details, **{k: v for k, v in chosen_attempt.items() if k not in ("label", "check")},
                   "alternatives": attempts}
        sides.append((SideResult(plan.label, group.role, plan.flops, "ok", err, details=details), plan))
        del passing, chosen  # the checked formulations' prepared inputs

    # Timing: the same case inputs for every side (library layouts prepared untimed), interleaved rounds.
    sets = [cases.case(i).inputs for i in range(n_sets)]
    runs: list[tuple[SideResult, Callable[[], Any]]] = []
    if ours.ok:
        runs.append((ours, time_ours))
    for side, plan in sides:
        if plan is not None:
            try:
                prepared = [plan.prepare(s) for s in sets]
                runs.append((side, lambda fn=plan.call, p=prepared: timed(fn, p)))
            except Exception as exc:
                side.check, side.verdict = f"error preparing the timing inputs: {_short(exc)}", "runtime_error"
    for _ in range(rounds):
        for side, run in runs:
            if not side.ok:
                continue
            try:
                stats = run()
            except MeasureFailure as failure:
                side.check = f"{failure.error.kind} while timing: {failure.error.message[:300]}"
                side.verdict = failure.error.kind
                continue
            except Exception as exc:
                side.check, side.verdict = f"error while timing: {_short(exc)}", "runtime_error"
                continue
            side.round_ms.append(stats.median_ms)
            side.rounds.append({"median_ms": stats.median_ms, "p20_ms": stats.p20_ms, "p80_ms": stats.p80_ms,
                                "reps": stats.reps, "saturated": getattr(stats, "saturated", None),
                                "saturation_note": getattr(stats, "saturation_note", "")})
    for side, _ in runs:
        if side.ok and side.round_ms:
            side.median_ms = statistics.median(side.round_ms)
    del runs, sets, cases
    return ShapeComparison(problem.name, shape.shape_id, shape.weight, selected_as, TARGETS[problem.name],
                           "float64" if exact else "native", ours, [s for s, _ in sides])


def run_library_compare(suite: Suite, device: str, tier: str, ops: list[str] | None = None,
                        shape_sets: Iterable[str] = ("largest", "weighted"), candidates_dir: Path | None = None,
                        rounds: int = 3, hardware: str | None = None, exact_flop_limit: float = EXACT_FLOP_LIMIT,
                        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
                        checkpoint: Callable[[LibraryCompareReport], None] | None = None) -> LibraryCompareReport:
    """Compare each op's candidate with the library on the selected shapes (see the module docstring);
    `checkpoint` receives the report so far after every shape (a killed run keeps what it measured)."""
    started = time.time()
    dry_run = not device.startswith("cuda")
    if dry_run:
        # Before anything imports triton.language: its own @triton.jit helpers (tl.cdiv...) must be interpreted too.
        if os.environ.get("TRITON_INTERPRET") != "1" and "triton.language" in sys.modules:
            raise EvaluationError("the CPU dry-run needs the Triton interpreter, but triton was imported without it: "
                                  "set TRITON_INTERPRET=1 in the environment")
        os.environ["TRITON_INTERPRET"] = "1"
    from aka_tui.bench.module_loading import import_file
    from aka_tui.bench.suite_run import find_candidate

    timers = Timers.capture()  # before any candidate module is imported, as in the evaluator's worker
    ops = list(ops or TARGETS)
    unknown = [o for o in ops if o not in TARGETS]
    if unknown:
        raise EvaluationError(f"no library comparison for {', '.join(unknown)}; compared ops: {', '.join(TARGETS)}")
    missing = [o for o in ops if o not in suite.problems]
    if missing:
        raise EvaluationError(f"problem(s) {', '.join(missing)} not in the suite {suite.directory}")
    repo = Path(__file__).resolve().parents[2]
    candidates_dir = candidates_dir or repo / "kb" / "family"
    if not candidates_dir.is_absolute() and not candidates_dir.is_dir() and (repo / candidates_dir).is_dir():
        candidates_dir = repo / candidates_dir  # `kb/family` from outside the checkout
    if not candidates_dir.is_dir():
        raise EvaluationError(f"candidates directory {candidates_dir} does not exist")
    if dry_run:
        log(DRY_RUN_NOTE)
        device_name = platform.processor() or platform.machine()
        l2_bytes = 0
    else:
        if torch.device(device).index is not None:
            torch.cuda.set_device(torch.device(device))
        device_name = torch.cuda.get_device_name(torch.cuda.current_device())
        l2_bytes = _l2_bytes(device, hardware)
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "cuda": str(torch.version.cuda), "cudnn": str(torch.backends.cudnn.version())}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = "missing"
    probe_cache: dict = {}
    comparisons: list[ShapeComparison] = []
    errors: dict[str, str] = {}

    def report() -> LibraryCompareReport:
        fp8 = probe_cache.get("fp8")
        return LibraryCompareReport(device, device_name, tier, dry_run, rounds, str(candidates_dir), versions,
                                    fp8.attempts if fp8 else [], list(comparisons), time.time() - started,
                                    dict(errors))

    def body() -> None:
        with torch.no_grad():
            for op in ops:
                problem = suite.problems[op]
                path = find_candidate(candidates_dir, problem)
                if path is None:
                    errors[op] = f"no candidate for {op} in {candidates_dir}"
                    log(f"{op}: {errors[op]}")
                    continue
                try:
                    ref_module = import_file(problem.reference_path, "ref")
                    input_module = import_file(problem.input_path, "inp")
                    cand_cls = import_file(path, "cand").Model
                except Exception as exc:
                    errors[op] = f"cannot load {op}: {_short(exc)}"
                    log(f"{op}: {errors[op]}")
                    continue
                ctx = _Context(problem, ref_module, input_module, device, probe_cache)
                for shape, why in select_shapes(problem, tier, shape_sets, ctx.flops):
                    log(f"{op}:{shape.shape_id} ({', '.join(why)})")
                    try:
                        comparisons.append(_compare_shape(ctx, shape, why, cand_cls, _display(path), timers,
                                                          l2_bytes, rounds, exact_flop_limit, log))
                    except Exception as exc:  # inputs or reference failing: the problem's side, say so and go on
                        errors[f"{op}:{shape.shape_id}"] = _short(exc)
                        log(f"  failed: {_short(exc)}")
                    if device.startswith("cuda"):
                        torch.cuda.empty_cache()
                    if checkpoint is not None:
                        checkpoint(report())

    nested_log = logging.getLogger("torch.nested._internal.sdpa")  # warns at length when a backend declines
    level = nested_log.level
    nested_log.setLevel(logging.ERROR)
    try:
        if dry_run:
            body()
        else:
            from aka_tui.bench.gpu_lock import exclusive_gpu, gpu_identity

            with exclusive_gpu(gpu_identity(torch.cuda.current_device())):
                body()
    finally:
        nested_log.setLevel(level)
    return report()


# --------------------------------------------------------------------------------------------- output

def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def table_rows(report: LibraryCompareReport) -> list[list[str]]:
    rows = []
    for comp in report.comparisons:
        for r in comp.rows():
            met = "-" if r["met"] is None else ("met" if r["met"] else "not met")
            label = ("bar: " if r["role"] == "bar" else "") + r["library"]
            rows.append([r["op"], r["shape"], label, _fmt(r["ours_ms"]), _fmt(r["library_ms"]), _rate(r["ours_tflops"]),
                         _rate(r["library_tflops"]), _rate(r["ratio"]), f"{r['target']:.2f}",
                         "dry-run" if report.dry_run else met, r["status"][:120]])
    return rows


HEADERS = ["op", "shape", "library", "ours ms", "lib ms", "ours TFLOP/s", "lib TFLOP/s", "ours/lib", "target",
           "met", "detail"]


def _header_lines(report: LibraryCompareReport) -> list[str]:
    lines = [f"library comparison on {report.device} ({report.device_name}), tier {report.tier}, {report.rounds} "
             f"interleaved rounds; torch {report.versions.get('torch')}, triton {report.versions.get('triton')}"]
    if report.dry_run:
        lines.append("NOTE: " + DRY_RUN_NOTE)
    lines.append("Throughput = the problem's FLOPs / median time, both sides at the same problem; fp8 with coarser "
                 "scales than block-wise is a throughput bar at the same M, N, K.")
    return lines


def _detail_lines(report: LibraryCompareReport) -> list[str]:
    lines = []
    for comp in report.comparisons:
        for side in comp.library:
            if side.ok:
                info = [f"{k}: {side.details[k]}" for k in ("strategy", "sdpa_backend", "form", "api", "layout", "note")
                        if k in side.details]
                lines.append(f"{comp.op}:{comp.shape_id}: {side.label}" + (f" ({'; '.join(info)})" if info else ""))
            tried = side.details.get("alternatives", [])
            if len(tried) > 1:
                lines.append("  tried: " + "; ".join(
                    f"{a['label']}: " + (f"{a['quick_ms']:.4f} ms" if "quick_ms" in a else a["check"][:80])
                    + (f" [{a['sdpa_backend']}]" if "sdpa_backend" in a else "") for a in tried))
    if report.fp8_probe:
        lines.append("fp8 scaled_mm probe: " + "; ".join(f"{a['form']}: {'ok' if a['ok'] else a['reason']}"
                                                         for a in report.fp8_probe))
    for key, value in report.errors.items():
        lines.append(f"error: {key}: {value}")
    return lines


def _summary_lines(report: LibraryCompareReport) -> list[str]:
    def verdict(met: bool | None) -> str:
        return "dry-run" if report.dry_run else ("-" if met is None else ("met" if met else "NOT met"))

    lines = []
    for s in report.op_summary():
        parts = [f"{s['op']}: target {s['target']:.2f}"]
        if s["largest_shape"]:
            parts.append(f"largest shape {s['largest_shape']} ratio {_fmt(s['largest_ratio'], 3)} "
                         f"({verdict(s['largest_met'])})")
        if s["weighted_geomean_ratio"] is not None:
            parts.append(f"weighted shapes geomean {_fmt(s['weighted_geomean_ratio'], 3)} "
                         f"({verdict(s['weighted_met'])})")
        lines.append("; ".join(parts))
    return lines


def render_text(report: LibraryCompareReport) -> str:
    from aka_tui.bench.report import text_table

    return "\n".join([*_header_lines(report), text_table(table_rows(report), HEADERS), *_summary_lines(report),
                      *_detail_lines(report)])


def render_markdown(report: LibraryCompareReport) -> str:
    out = ["# Library comparison (issue 8 bars)", "", *(line + "  " for line in _header_lines(report)), ""]
    out.append("| " + " | ".join(HEADERS) + " |")
    out.append("|" + "---|" * len(HEADERS))
    out += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in table_rows(report)]
    out += ["", *(f"- {line}" for line in _summary_lines(report)), "", *(f"- {line}" for line in _detail_lines(report))]
    return "\n".join(out) + "\n"


def write_reports(report: LibraryCompareReport, out_dir: Path, stem: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    md_path.write_text(render_markdown(report))
    return json_path, md_path
