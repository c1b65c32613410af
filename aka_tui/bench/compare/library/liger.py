"""Liger-Kernel (hand-tuned Triton kernels, `pip install liger-kernel==0.8.5`) as an optional peer library: its
forward functions on the problems it covers, each formulation checked against the problem's reference and timed
beside our kernel like the vendor-library bars.

What Liger is called with (every layout change is made in the untimed `prepare`):

- rms_norm: `LigerRMSNormFunction(x, weight, eps, offset=0.0, casting_mode)`; "gemma" computes in fp32 with one
  final rounding (the problem's semantics), "llama" (Liger's default) rounds x * rstd to the input dtype before
  the weight; both are checked, the faster of those that agree is the peer.
- fused_add_rms_norm: `LigerFusedAddRMSNormFunction(x, residual, weight, eps, 0.0, casting_mode)`, which returns
  (y, x + residual) as new tensors, the problem's outputs in its order; the same two casting modes.
- layer_norm: `LigerLayerNormFunction(x, weight, bias, eps)` (fp32 statistics, one final rounding).
- silu_and_mul: `LigerFusedGateUpSiLUMulFunction` on the packed [T, 2I] input as it is, and `LigerSiLUMulFunction`
  on the gate and up halves (split into contiguous tensors before timing); Liger rounds silu(gate) to the input
  dtype before multiplying by up.
- rope: `LigerRopeFunction` (neox rotate-half on [batch, heads, seq, head_dim] views of token-major q, k, with
  partial `rotary_dim`). It rotates q and k in place and reads one cos/sin row per token: the cache rows are
  gathered by `positions` and upcast to fp32 before timing (the reference upcasts the cache too, so the result is
  the problem's, rounded once), and q and k are copied inside the timed call, since the problem returns new
  tensors and leaves its inputs as they are.

Liger's modules are imported from their submodules (`liger_kernel.ops.rms_norm`...), its Triton
implementations, not a backend its dispatcher may swap in. Forward only: the comparison runs under
`torch.no_grad()`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from aka_tui.bench.compare.library.plans import Context, LibraryPlan, PlanGroup
from aka_tui.bench.compare.library.results import PEER_OPS, short_error
from aka_tui.bench.problem.model import Shape

PEER = "Liger-Kernel"
PIN = "liger-kernel==0.8.5"
INSTALL_HINT = f"pip install {PIN} (or the project's extra: pip install -e '.[peers]')"
SUBMODULES = {"rms_norm": "liger_kernel.ops.rms_norm", "fused_add_rms_norm": "liger_kernel.ops.fused_add_rms_norm",
              "layer_norm": "liger_kernel.ops.layer_norm", "swiglu": "liger_kernel.ops.swiglu",
              "rope": "liger_kernel.ops.rope"}


@dataclass(frozen=True)
class PeerStatus:
    """Whether a peer library can be called here: its version, or why not; its imported modules."""

    name: str
    version: str | None
    reason: str = ""  # non-empty: not importable (the first line of the error)
    modules: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def available(self) -> bool:
        return not self.reason

    def to_json(self) -> dict:
        return {"available": self.available, "version": self.version, "reason": self.reason}


def probe_liger(import_module: Callable[[str], Any] = importlib.import_module) -> PeerStatus:
    """Import Liger's forward functions; any failure (not installed, a broken install) makes it unavailable."""
    try:
        modules = {key: import_module(name) for key, name in SUBMODULES.items()}
    except Exception as exc:
        return PeerStatus(PEER, None, short_error(exc))
    try:
        from importlib.metadata import version

        found: str | None = version("liger-kernel")
    except Exception:
        found = getattr(import_module("liger_kernel"), "__version__", None)
    return PeerStatus(PEER, found or "unknown", "", modules)


def liger_status(probe_cache: dict) -> PeerStatus:
    """The run's Liger status, probed once (the import takes seconds)."""
    if "liger" not in probe_cache:
        probe_cache["liger"] = probe_liger()
    return probe_cache["liger"]


def skip_line(status: PeerStatus) -> str:
    """The one line a run says when the Liger peer is not there."""
    return (f"{PEER} peer skipped ({status.reason}): {INSTALL_HINT} to time {', '.join(PEER_OPS)} against it too")


def _plan(label: str, flops: float, api: str, mapping: str, prepare: Callable[[dict], dict],
          call: Callable[[dict], Any]) -> LibraryPlan:
    return LibraryPlan(label, flops, prepare=prepare, call=call, details={"api": api, "mapping": mapping})


def rms_norm_plans(mods: dict[str, Any], eps: float, flops: float) -> list[LibraryPlan]:
    fn = mods["rms_norm"].LigerRMSNormFunction

    def plan(mode: str, what: str) -> LibraryPlan:
        return _plan(f"LigerRMSNormFunction, casting_mode {mode}", flops,
                     "liger_kernel.ops.rms_norm.LigerRMSNormFunction",
                     f"x, weight as given; eps {eps:g}, offset 0; {what}",
                     prepare=lambda i: {"x": i["x"], "w": i["weight"]},
                     call=lambda p: fn.apply(p["x"], p["w"], eps, 0.0, mode, True, None))

    return [plan("gemma", "fp32 throughout, one final rounding (the problem's semantics)"),
            plan("llama", "x * rstd rounded to the input dtype before the weight (Liger's default)")]


def fused_add_rms_norm_plans(mods: dict[str, Any], eps: float, flops: float) -> list[LibraryPlan]:
    fn = mods["fused_add_rms_norm"].LigerFusedAddRMSNormFunction

    def plan(mode: str, what: str) -> LibraryPlan:
        return _plan(f"LigerFusedAddRMSNormFunction, casting_mode {mode}", flops,
                     "liger_kernel.ops.fused_add_rms_norm.LigerFusedAddRMSNormFunction",
                     f"x, residual, weight as given; eps {eps:g}, offset 0; returns (y, x + residual); {what}",
                     prepare=lambda i: {"x": i["x"], "r": i["residual"], "w": i["weight"]},
                     call=lambda p: fn.apply(p["x"], p["r"], p["w"], eps, 0.0, mode, False))

    return [plan("gemma", "norm in fp32, one final rounding (the problem's semantics)"),
            plan("llama", "x * rstd rounded to the input dtype before the weight (Liger's default)")]


def layer_norm_plans(mods: dict[str, Any], eps: float, flops: float) -> list[LibraryPlan]:
    fn = mods["layer_norm"].LigerLayerNormFunction
    return [_plan("LigerLayerNormFunction", flops, "liger_kernel.ops.layer_norm.LigerLayerNormFunction",
                  f"x, weight, bias as given; eps {eps:g}; fp32 statistics, one final rounding",
                  prepare=lambda i: {"x": i["x"], "w": i["weight"], "b": i["bias"]},
                  call=lambda p: fn.apply(p["x"], p["w"], p["b"], eps))]


def split_gate_up(inputs: dict) -> dict:
    """The packed [T, 2I] input as contiguous gate [T, I] and up [T, I] (gate first, as the problem packs it)."""
    x = inputs["x"]
    half = x.shape[-1] // 2
    return {"gate": x[..., :half].contiguous(), "up": x[..., half:].contiguous()}


def silu_and_mul_plans(mods: dict[str, Any], flops: float) -> list[LibraryPlan]:
    swiglu = mods["swiglu"]
    rounding = "silu(gate) rounded to the input dtype, then * up"
    return [_plan("LigerFusedGateUpSiLUMulFunction (packed gate|up)", flops,
                  "liger_kernel.ops.swiglu.LigerFusedGateUpSiLUMulFunction",
                  f"the packed [T, 2I] input as given; {rounding}",
                  prepare=lambda i: {"x": i["x"]},
                  call=lambda p: swiglu.LigerFusedGateUpSiLUMulFunction.apply(p["x"])),
            _plan("LigerSiLUMulFunction (gate, up split before timing)", flops,
                  "liger_kernel.ops.swiglu.LigerSiLUMulFunction",
                  f"gate and up halves copied into contiguous tensors before timing; {rounding}",
                  prepare=split_gate_up,
                  call=lambda p: swiglu.LigerSiLUMulFunction.apply(p["gate"], p["up"]))]


def rope_prepare(inputs: dict, rotary_dim: int) -> dict:
    """Liger's per-token cos/sin ([T, R/2] each): the cache rows at `positions`, upcast as the reference does."""
    q = inputs["q"]
    ct = torch.promote_types(q.dtype, torch.float32)
    rows = inputs["cos_sin_cache"].index_select(0, inputs["positions"]).to(ct)
    half = rotary_dim // 2
    return {"q": q, "k": inputs["k"], "cos": rows[:, :half].contiguous(), "sin": rows[:, half:rotary_dim].contiguous()}


def rope_call(fn: Any, prepared: dict, rotary_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Copies of q and k rotated in place by Liger, viewed [1, heads, T, D] over token-major storage."""
    q, k = prepared["q"].clone(), prepared["k"].clone()
    t, hq, d = q.shape
    hk = k.shape[1]
    q_out, k_out = fn.apply(q.view(1, t, hq, d).transpose(1, 2), k.view(1, t, hk, d).transpose(1, 2),
                            prepared["cos"], prepared["sin"], None, 1, rotary_dim)
    return q_out.transpose(1, 2).reshape(t, hq, d), k_out.transpose(1, 2).reshape(t, hk, d)


def rope_plans(mods: dict[str, Any], rotary_dim: int, flops: float) -> list[LibraryPlan]:
    fn = mods["rope"].LigerRopeFunction
    return [_plan("LigerRopeFunction (cos/sin rows gathered before timing)", flops,
                  "liger_kernel.ops.rope.LigerRopeFunction",
                  f"q, k viewed [1, heads, T, D] (no copy) and copied inside the timed call (Liger rotates in place; "
                  f"the problem returns new tensors); cos/sin = cos_sin_cache[positions] split in halves, upcast to "
                  f"fp32, before timing; rotary_dim {rotary_dim}",
                  prepare=lambda i: rope_prepare(i, rotary_dim),
                  call=lambda p: rope_call(fn, p, rotary_dim))]


def liger_plans(mods: dict[str, Any], op: str, reference: Any, flops: float) -> list[LibraryPlan]:
    """Liger's formulations of `op`, its reference `Model` instance giving eps / rotary_dim; [] for another op."""
    if op == "rms_norm":
        return rms_norm_plans(mods, float(reference.eps), flops)
    if op == "fused_add_rms_norm":
        return fused_add_rms_norm_plans(mods, float(reference.eps), flops)
    if op == "layer_norm":
        return layer_norm_plans(mods, float(reference.eps), flops)
    if op == "silu_and_mul":
        return silu_and_mul_plans(mods, flops)
    if op == "rope":
        return rope_plans(mods, int(reference.rotary_dim), flops)
    return []


def liger_groups(shape: Shape, inputs: dict, ctx: Context) -> list[PlanGroup]:
    """The Liger peer of the shape (the fastest of its formulations that agree), or nothing: an op Liger does not
    cover, or Liger not importable (the run says so once)."""
    op = ctx.problem.name
    if op not in PEER_OPS:
        return []
    status = liger_status(ctx.probe_cache)
    if not status.available:
        return []
    reference = ctx.ref_module.Model(**shape.init_kwargs)
    plans = liger_plans(status.modules, op, reference, ctx.flops(shape))
    for plan in plans:
        plan.details["peer"] = f"{PEER} {status.version}"
    return [PlanGroup("peer", PEER, plans, select="fastest")] if plans else []
