"""Library formulations of a compared shape: how the library side lays out the inputs (untimed), what it times and
how its output is read back; the GEMM plans, and what a compared shape shares (`Context`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

from aka_tui.bench.compare.library.forms import (
    FP8_FORMS,
    FormChoice,
    ScaledMMForm,
    call_scaled_mm,
    probe_scaled_mm,
    problem_scales_for,
    scaled_mm_scales,
    select_scaled_mm_form,
)
from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.problem.seeds import derive_seed


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

    role: str  # "bar" (the side the target is read against) | "context"
    title: str
    alternatives: list[LibraryPlan]
    select: str = "first"


@dataclass
class Context:
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
        from aka_tui.bench.problem.inputs import make_inputs
        from aka_tui.bench.roofline.bound import measure_entry

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


def gemm_bf16_groups(shape: Shape, inputs: dict, ctx: Context) -> list[PlanGroup]:
    m, k = inputs["x"].shape
    n = inputs["w"].shape[0]
    kw = shape.init_kwargs
    act, has_bias, has_res = kw.get("activation", "none"), bool(kw.get("has_bias")), bool(kw.get("has_residual"))
    has_gate = bool(kw.get("has_gate"))
    bare = LibraryPlan(
        "torch.matmul (cuBLAS GEMM alone)", 2.0 * m * n * k,
        prepare=lambda i: {"x": i["x"], "w": i["w"]},
        call=lambda p: torch.matmul(p["x"], p["w"].t()),
        reference_init={"activation": "none", "has_bias": False, "has_residual": False},
        reference_inputs=lambda i: {"x": i["x"], "w": i["w"]},
        details={"what": "x @ w^T in the input dtype, no epilogue; FLOPs 2*M*N*K"})
    groups = [PlanGroup("bar", "torch.matmul", [bare])]
    if act != "none" or has_bias or has_res or has_gate:
        def epilogue(p: dict) -> torch.Tensor:
            z = F.linear(p["x"], p["w"], p.get("bias"))  # bias fused by cuBLASLt
            if act == "gelu_tanh":
                z = F.gelu(z, approximate="tanh")
            elif act == "silu":
                z = F.silu(z, inplace=True)
            elif act == "sigmoid":
                z = torch.sigmoid_(z)
            if has_gate:
                z *= p["gate"]
            if has_res:
                z += p["residual"]
            return z

        keep = ["x", "w"] + (["bias"] if has_bias else []) + (["residual"] if has_res else []) + \
            (["gate"] if has_gate else [])
        what = "F.linear" + (" with bias" if has_bias else "") + (f", {act}" if act != "none" else "") + \
               (", * gate" if has_gate else "") + (", + residual" if has_res else "") + " in the input dtype"
        groups.append(PlanGroup("context", "F.linear + torch epilogue", [LibraryPlan(
            "F.linear + torch epilogue", ctx.flops(shape), prepare=lambda i: {key: i[key] for key in keep},
            call=epilogue, details={"what": what})]))
    return groups


def gemm_fp8_groups(shape: Shape, inputs: dict, ctx: Context) -> list[PlanGroup]:
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
            call=lambda p, form=form: call_scaled_mm(form, p["a"], p["bt"], p["sa"], p["sb"], out_dtype),  # type: ignore[misc]  # mypy cannot infer a lambda with default arguments
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
