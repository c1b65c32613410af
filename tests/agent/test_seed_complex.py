"""Complex arithmetic as real pairs (agent/seed_complex.py): the graph traced again without complex tensors
computes what the complex one did, and a graph the rules do not cover is left alone."""

from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from aka_tui.agent.seed_complex import has_complex, real_pairs


def _rotations(x: torch.Tensor, y: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    a = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    b = torch.polar(torch.ones_like(t), t)
    c = a * b[None] + a.conj() * 2.0 - a / (b[None] + 3)
    d = torch.exp(c[:, 1:, :]).sum(1, keepdim=True).permute(0, 2, 1)
    e = torch.cat([c, c.unsqueeze(-1).squeeze(-1)], dim=-1)
    return torch.view_as_real(d).flatten(-2) + y.sum(), e.abs(), torch.view_as_real(e).flatten(-2), c.real * c.imag


def test_complex_arithmetic_becomes_real_pairs() -> None:
    x, y, t = torch.randn(3, 4, 8), torch.randn(5), torch.randn(4, 4)
    traced = make_fx(_rotations, tracing_mode="fake")(x, y, t)
    assert has_complex(traced)
    real = real_pairs(traced, [x, y, t])
    assert real is not None and not has_complex(real)
    assert not any("complex" in str(n.target) or "polar" in str(n.target) for n in real.graph.nodes)
    for got, want in zip(real(x, y, t), _rotations(x, y, t)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_graph_without_a_rule_or_with_a_complex_result_is_left_alone() -> None:
    x = torch.randn(4, 4, 2)

    def product(x: torch.Tensor) -> torch.Tensor:  # a complex matrix product: no rule
        z = torch.view_as_complex(x)
        return torch.view_as_real(z @ z)

    def complex_result(x: torch.Tensor) -> torch.Tensor:
        return torch.view_as_complex(x) * 2

    def complex_input(z: torch.Tensor) -> torch.Tensor:  # a complex input: nothing holds it as a pair
        return torch.view_as_real(z * 2)

    z = torch.randn(4, 4, dtype=torch.complex64)
    assert real_pairs(make_fx(complex_input, tracing_mode="fake")(z), [z]) is None
    for f in (product, complex_result):
        assert real_pairs(make_fx(f, tracing_mode="fake")(x), [x]) is None
    assert real_pairs(make_fx(torch.sin, tracing_mode="fake")(x), [x]) is None  # nothing complex
