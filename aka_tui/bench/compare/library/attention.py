"""The library side of prefill attention: causal scaled_dot_product_attention formulations of a packed batch
(SDPA's flash kernel on the packed batch, nested jagged tensors, one call per length group, one padded call), the
fastest that agrees with the reference being the bar, with the backend that ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F

from aka_tui.bench.compare.library.plans import Context, LibraryPlan, PlanGroup
from aka_tui.bench.problem.model import Shape

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


@dataclass(frozen=True)
class _Packed:
    """What every formulation of one packed-batch shape shares."""

    heads: int
    dim: int
    scale: float
    group: int  # query heads per K/V head
    flops: float
    lens: list[int]

    @property
    def gqa_kw(self) -> dict[str, Any]:
        return {"enable_gqa": True} if self.group > 1 else {}

    def kv(self, t: torch.Tensor, expand: bool) -> torch.Tensor:
        return t.repeat_interleave(self.group, dim=1) if expand and self.group > 1 else t

    def packed_out(self, prepared: dict, pieces: list[tuple[int, int, torch.Tensor]]) -> torch.Tensor:
        out = torch.empty(prepared["total"], self.heads, self.dim, dtype=prepared["dtype"], device=prepared["device"])
        for start, length, piece in pieces:  # piece [H, L, D]
            out[start:start + length] = piece.transpose(0, 1)
        return out


def _describe(plan_call: Callable[[dict], Any]) -> Callable[[dict], dict]:
    return lambda prepared: {"sdpa_backend": sdpa_backend(plan_call, prepared)}


def _varlen_plan(a: _Packed) -> LibraryPlan:
    """SDPA's flash kernel called through its aten op on the packed batch: one launch, native GQA."""
    def varlen_prepare(i: dict) -> dict:
        lengths = (i["cu_seqlens"][1:] - i["cu_seqlens"][:-1]).tolist()
        return {"q": i["q"], "k": i["k"], "v": i["v"], "cu": i["cu_seqlens"].to(torch.int32),
                "max": int(max(lengths))}

    return LibraryPlan(
        "SDPA flash kernel, varlen on the packed batch (aten::_flash_attention_forward)", a.flops,
        prepare=varlen_prepare,
        call=lambda p: torch.ops.aten._flash_attention_forward(
            p["q"], p["k"], p["v"], p["cu"], p["cu"], p["max"], p["max"], 0.0, True, False, scale=a.scale)[0],
        details={"strategy": "packed varlen, one launch, native GQA: the kernel SDPA's flash backend runs",
                 "sdpa_backend": "flash (called through its aten op)"})


def _nested_plan(a: _Packed, expand: bool) -> LibraryPlan:
    """One SDPA call on nested jagged tensors (PyTorch runs a varlen kernel)."""
    suffix = " (K/V heads expanded)" if expand else ""

    def nested_prepare(i: dict) -> dict:
        offsets = i["cu_seqlens"].to(torch.int64)
        lengths = (offsets[1:] - offsets[:-1]).tolist()
        bounds = {"min_seqlen": int(min(lengths)), "max_seqlen": int(max(lengths))}

        def nt(t: torch.Tensor) -> torch.Tensor:
            return torch.nested.nested_tensor_from_jagged(t, offsets, **bounds).transpose(1, 2)
        return {"q": nt(i["q"]), "k": nt(a.kv(i["k"], expand)), "v": nt(a.kv(i["v"], expand))}

    def nested_call(p: dict) -> Any:
        return F.scaled_dot_product_attention(p["q"], p["k"], p["v"], is_causal=True, scale=a.scale,
                                              **({} if expand else a.gqa_kw))

    return LibraryPlan(
        "nested jagged SDPA" + suffix, a.flops, prepare=nested_prepare, call=nested_call,
        output=lambda p, r: r.transpose(1, 2).values().contiguous(),
        details={"strategy": "nested jagged tensors (one SDPA call; PyTorch runs a varlen kernel)"
                             + ("; K/V heads expanded before timing" if expand else "")},
        describe=_describe(nested_call))


def _with_backend(backend: str | None, run: Callable[[], Any]) -> Any:
    """`run()` as it is, or with one SDPA backend forced."""
    if backend is None:
        return run()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return run()


def _loop_plan(a: _Packed, backend: str | None, expand: bool) -> LibraryPlan:
    """One SDPA call per group of equal-length sequences."""
    forced = f" [{backend} forced]" if backend else ""
    suffix = " (K/V heads expanded)" if expand else ""

    def loop_prepare(i: dict) -> dict:
        bounds = i["cu_seqlens"].tolist()
        by_len: dict[int, list[int]] = {}
        for start, end in zip(bounds[:-1], bounds[1:]):
            if end > start:
                by_len.setdefault(end - start, []).append(start)
        groups = []
        for length, starts in by_len.items():
            def stack(t: torch.Tensor, length: int = length, starts: list[int] = starts) -> torch.Tensor:
                return torch.stack([t[s:s + length] for s in starts]).transpose(1, 2).contiguous()
            groups.append((starts, length, stack(i["q"]), stack(a.kv(i["k"], expand)), stack(a.kv(i["v"], expand))))
        return {"groups": groups, "total": i["q"].shape[0], "dtype": i["q"].dtype, "device": i["q"].device}

    def loop_call(p: dict) -> Any:
        return _with_backend(backend, lambda: [
            F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=a.scale, **({} if expand else a.gqa_kw))
            for _, _, q, k, v in p["groups"]])

    def loop_out(p: dict, outs: list[torch.Tensor]) -> torch.Tensor:
        pieces = [(s, length, o[j]) for (starts, length, *_), o in zip(p["groups"], outs)
                  for j, s in enumerate(starts)]
        return a.packed_out(p, pieces)

    calls, batch = len(set(a.lens)), len(a.lens)
    return LibraryPlan(
        f"SDPA per length group{forced}{suffix}", a.flops, prepare=loop_prepare, call=loop_call, output=loop_out,
        details={"strategy": f"one SDPA call per group of equal-length sequences ({calls} calls for {batch} "
                             f"sequences: launch overhead included)"
                             + ("; K/V heads expanded before timing" if expand else "")},
        describe=_describe(loop_call))


def _padded_plan(a: _Packed, backend: str | None, expand: bool) -> LibraryPlan:
    """One SDPA call on the batch right-padded to its longest sequence (padded rows discarded)."""
    forced = f" [{backend} forced]" if backend else ""
    suffix = " (K/V heads expanded)" if expand else ""
    batch, longest = len(a.lens), max(a.lens)
    causal_work = sum(length * (length + 1) / 2 for length in a.lens)
    waste = batch * longest * (longest + 1) / 2 / causal_work

    def pad_prepare(i: dict) -> dict:
        bounds = i["cu_seqlens"].tolist()
        starts = [(s, e - s) for s, e in zip(bounds[:-1], bounds[1:])]

        def pad(t: torch.Tensor) -> torch.Tensor:
            out = t.new_zeros(batch, t.shape[1], longest, a.dim)
            for b, (s, length) in enumerate(starts):
                out[b, :, :length] = t[s:s + length].transpose(0, 1)
            return out
        return {"q": pad(i["q"]), "k": pad(a.kv(i["k"], expand)), "v": pad(a.kv(i["v"], expand)), "starts": starts,
                "total": i["q"].shape[0], "dtype": i["q"].dtype, "device": i["q"].device}

    def pad_call(p: dict) -> Any:
        return _with_backend(backend, lambda: F.scaled_dot_product_attention(
            p["q"], p["k"], p["v"], is_causal=True, scale=a.scale, **({} if expand else a.gqa_kw)))

    return LibraryPlan(
        f"SDPA on a padded batch{forced}{suffix}", a.flops, prepare=pad_prepare, call=pad_call,
        output=lambda p, r: a.packed_out(p, [(s, length, r[b, :, :length]) for b, (s, length) in enumerate(p["starts"])]),
        details={"strategy": f"right-padded to {longest} tokens, one call ({waste:.2f}x the causal work; "
                             "padded rows discarded)"
                             + ("; K/V heads expanded before timing" if expand else "")},
        describe=_describe(pad_call))


def attention_groups(shape: Shape, inputs: dict, ctx: Context) -> list[PlanGroup]:
    """Every SDPA formulation of the shape, in the order they are tried; the fastest that agrees is the bar."""
    kw = shape.init_kwargs
    heads, kv_heads, dim = int(kw["num_heads"]), int(kw["num_kv_heads"]), int(kw["head_dim"])
    scale = float(kw["softmax_scale"]) if kw.get("softmax_scale") is not None else dim ** -0.5
    lens = (inputs["cu_seqlens"][1:] - inputs["cu_seqlens"][:-1]).tolist()
    a = _Packed(heads, dim, scale, heads // kv_heads, ctx.flops(shape), lens)
    cuda = ctx.device.startswith("cuda")
    plans = [_varlen_plan(a)] if cuda else []
    plans += [_nested_plan(a, expand) for expand in (False, True)]
    for backend in ((None, "cudnn") if cuda else (None,)):
        for expand in (False, True):
            plans.append(_loop_plan(a, backend, expand))
            if len(lens) >= 2:
                plans.append(_padded_plan(a, backend, expand))
    return [PlanGroup("bar", "F.scaled_dot_product_attention", plans, select="fastest")]
