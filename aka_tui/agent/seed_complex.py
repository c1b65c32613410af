"""Complex arithmetic as pairs of real numbers, so that references written with complex tensors lower to Triton.

Inductor generates no code for complex tensors: a rotary embedding written as a complex multiplication
(`view_as_complex`, `polar`, `*`, `view_as_real`) becomes library calls, which a compiler seed cannot own. Here
the graph inductor is about to lower (aten ops, after its decompositions) is run again with every complex tensor
held as a real tensor with a trailing dimension of 2 (real, imaginary), the layout `view_as_real` gives, and traced
into a graph without complex tensors: `view_as_complex` and `view_as_real` become no-ops, a product becomes four
real products, and views, slices and reductions move their dimensions past the pair.

A graph with a complex op not covered here (a complex matrix product, a complex tensor created from a dtype, a
complex output) is left as it is, and the seed reports the library calls as before.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

aten = torch.ops.aten
_REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}


class NotReal(Exception):
    """A complex operation with no real-pair rule."""


class _Pair:
    """A complex tensor as a real one with a trailing (real, imaginary) dimension."""

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t

    @property
    def re(self) -> torch.Tensor:
        return self.t.select(-1, 0)

    @property
    def im(self) -> torch.Tensor:
        return self.t.select(-1, 1)

    def dim(self) -> int:
        return self.t.dim() - 1


def _pair(re: torch.Tensor, im: torch.Tensor) -> _Pair:
    # a pointwise select, not a concatenation: inductor fuses it with what computes both parts (a `cat` of the
    # parts became one kernel per part plus one to read the pair)
    first = torch.arange(2, device=re.device) == 0
    return _Pair(torch.where(first, re.unsqueeze(-1), im.unsqueeze(-1)))


def _parts(x: Any) -> tuple[Any, Any]:
    """(real, imaginary) of a pair, a real tensor or a number."""
    if isinstance(x, _Pair):
        return x.re, x.im
    if isinstance(x, complex):
        return x.real, x.imag
    return x, 0.0


def _dim(d: int, ndim: int) -> int:
    """A dimension of the complex tensor as one of its pair (negative ones count from before the pair)."""
    return d if d >= 0 else d + ndim


def _mul(a: Any, b: Any) -> Any:
    if isinstance(a, _Pair) and isinstance(b, _Pair):
        return _pair(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
    pair, other = (a, b) if isinstance(a, _Pair) else (b, a)
    if isinstance(other, complex):
        return _mul(pair, _pair(torch.full_like(pair.re, other.real), torch.full_like(pair.re, other.imag)))
    return _Pair(pair.t * (other.unsqueeze(-1) if isinstance(other, torch.Tensor) else other))


def _add(a: Any, b: Any, alpha: Any = 1, sign: int = 1) -> Any:
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    return _pair(ar + sign * alpha * br, ai + sign * alpha * bi)


def _div(a: Any, b: Any) -> Any:
    if not isinstance(b, _Pair):
        if isinstance(b, complex):
            b = _pair(torch.full_like(a.re, b.real), torch.full_like(a.re, b.imag))
        else:
            return _Pair(a.t / (b.unsqueeze(-1) if isinstance(b, torch.Tensor) else b))
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    norm = br * br + bi * bi
    return _pair((ar * br + ai * bi) / norm, (ai * br - ar * bi) / norm)


def _to_copy(x: Any, dtype: Any = None, **kwargs: Any) -> Any:
    if isinstance(x, _Pair):
        if dtype is None or dtype in _REAL_OF:
            return _Pair(x.t.to(_REAL_OF.get(dtype, x.t.dtype)))
        return x.re.to(dtype)  # complex to real keeps the real part, as torch does
    return _pair(x.to(_REAL_OF[dtype]), torch.zeros_like(x, dtype=_REAL_OF[dtype]))


def _exp(p: _Pair) -> _Pair:
    scale = torch.exp(p.re)
    return _pair(scale * torch.cos(p.im), scale * torch.sin(p.im))


def _cat(tensors: list[Any], dim: int = 0) -> _Pair:
    if not all(isinstance(t, _Pair) for t in tensors):
        raise NotReal("cat of complex and real tensors")
    return _Pair(torch.cat([t.t for t in tensors], _dim(dim, tensors[0].dim())))


def _sum(p: _Pair, dims: Any = None, keepdim: bool = False, dtype: Any = None) -> _Pair:
    axes = list(range(p.dim())) if not dims else [_dim(d, p.dim()) for d in dims]
    return _Pair(p.t.sum(axes, keepdim=keepdim))


_RULES: dict[Any, Callable[..., Any]] = {
    aten.view_as_complex.default: lambda x: _Pair(x),
    aten.view_as_real.default: lambda p: p.t,
    aten.polar.default: lambda r, theta: _pair(r * torch.cos(theta), r * torch.sin(theta)),
    aten.complex.default: lambda re, im: _pair(re, im),
    aten.real.default: lambda p: p.re,
    aten.imag.default: lambda p: p.im,
    aten.abs.default: lambda p: torch.sqrt(p.re * p.re + p.im * p.im),
    aten.angle.default: lambda p: torch.atan2(p.im, p.re),
    aten.mul.Tensor: _mul,
    aten.mul.Scalar: _mul,
    aten.add.Tensor: _add,
    aten.add.Scalar: _add,
    aten.sub.Tensor: lambda a, b, alpha=1: _add(a, b, alpha, -1),
    aten.sub.Scalar: lambda a, b, alpha=1: _add(a, b, alpha, -1),
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.neg.default: lambda p: _Pair(-p.t),
    aten.exp.default: _exp,
    aten._conj.default: lambda p: _pair(p.re, -p.im),
    aten.conj_physical.default: lambda p: _pair(p.re, -p.im),
    aten.resolve_conj.default: lambda p: p,
    aten.resolve_neg.default: lambda p: p,
    aten.alias.default: lambda p: p,
    aten.clone.default: lambda p, **kw: _Pair(p.t.clone()),
    aten._to_copy.default: _to_copy,
    aten.unsqueeze.default: lambda p, d: _Pair(p.t.unsqueeze(_dim(d, p.dim() + 1))),
    aten.squeeze.dim: lambda p, d: _Pair(p.t.squeeze(_dim(d, p.dim()))),
    aten.squeeze.dims: lambda p, ds: _Pair(p.t.squeeze([_dim(d, p.dim()) for d in ds])),
    aten.view.default: lambda p, size: _Pair(p.t.reshape([*size, 2])),
    aten._unsafe_view.default: lambda p, size: _Pair(p.t.reshape([*size, 2])),
    aten.reshape.default: lambda p, size: _Pair(p.t.reshape([*size, 2])),
    aten.expand.default: lambda p, size, **kw: _Pair(p.t.expand([*size, 2])),
    aten.permute.default: lambda p, dims: _Pair(p.t.permute([*(_dim(d, p.dim()) for d in dims), p.dim()])),
    aten.slice.Tensor: lambda p, dim=0, start=None, end=None, step=1: _Pair(
        aten.slice.Tensor(p.t, _dim(dim, p.dim()), start, end, step)),
    aten.select.int: lambda p, dim, index: _Pair(p.t.select(_dim(dim, p.dim()), index)),
    aten.index.Tensor: lambda p, indices: _Pair(aten.index.Tensor(p.t, indices)),
    aten.cat.default: _cat,
    aten.sum.dim_IntList: _sum,
    aten.sum.default: lambda p, dtype=None: _sum(p),
}


def _is_complex(node: Any) -> bool:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    values = value if isinstance(value, (tuple, list)) else [value]
    return any(isinstance(v, torch.Tensor) and v.dtype.is_complex for v in values)


def _touches_complex(node: torch.fx.Node) -> bool:
    return _is_complex(node) or any(_is_complex(a) for a in node.all_input_nodes)


def has_complex(gm: torch.fx.GraphModule) -> bool:
    return any(_is_complex(n) for n in gm.graph.nodes)


def real_pairs(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> torch.fx.GraphModule | None:
    """`gm` traced again without complex tensors; None where it has none, or one the rules do not cover."""
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    if not has_complex(gm):
        return None
    for node in gm.graph.nodes:
        if node.op == "call_function" and _touches_complex(node) and node.target not in _RULES:
            return None
        if node.op == "output" and any(_is_complex(a) for a in node.all_input_nodes):
            return None  # a complex result: the candidate would have to return one
        if node.op in ("placeholder", "get_attr") and _is_complex(node):
            return None  # a complex input or constant: nothing holds it as a pair

    def run(*args: Any) -> Any:
        env: dict[torch.fx.Node, Any] = {}
        inputs = iter(args)
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(inputs)
            elif node.op == "get_attr":
                env[node] = getattr(gm, str(node.target))
            elif node.op == "call_function":
                args_, kwargs = torch.fx.map_arg((node.args, node.kwargs), lambda n: env[n])
                rule = _RULES[node.target] if _touches_complex(node) else node.target
                env[node] = rule(*args_, **kwargs)
            elif node.op == "output":
                return torch.fx.map_arg(node.args[0], lambda n: env[n])
        raise NotReal("the graph has no output")

    fake_mode = detect_fake_mode(example_inputs)
    try:
        with fake_mode if fake_mode is not None else torch.no_grad():
            return make_fx(run, decomposition_table=select_decomp_table())(*example_inputs)
    except (NotReal, AttributeError, RuntimeError, TypeError, ValueError):  # a case the rules get wrong: inductor's graph as it was
        return None
