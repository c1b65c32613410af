"""The KB q/k head norm on heads split ([T, H, D]) and flattened per token ([T, H * D], head_dim given), on
Triton's interpreter against the suite reference (which takes both), including a q sliced from a fused row."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TRITON_INTERPRET", "1")

from aka_tui.bench.problem.module_loading import import_file  # noqa: E402
from tests.conftest import PROBLEMS, REPO  # noqa: E402

KERNEL = import_file(REPO / "kb" / "family" / "norm" / "qk_head_norm.py", "qk_head_norm_layouts_kernel")
REFERENCE = import_file(PROBLEMS / "qk_head_norm" / "reference.py", "qk_head_norm_layouts_reference")


@pytest.mark.parametrize("single_launch", [True, False])
@pytest.mark.parametrize("flattened", [False, True])
def test_heads_split_or_flattened_are_normalised_per_head(flattened: bool, single_launch: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KERNEL.TUNABLES, "SINGLE_LAUNCH", single_launch)
    generator = torch.Generator().manual_seed(5)
    tokens, q_heads, kv_heads, dim = 5, 4, 2, 48
    fused = torch.randn(tokens, (q_heads + 2 * kv_heads) * dim, generator=generator)
    q, k = fused[:, :q_heads * dim], fused[:, q_heads * dim:(q_heads + kv_heads) * dim]  # strided rows
    if not flattened:
        q, k = q.unflatten(1, (q_heads, dim)), k.unflatten(1, (kv_heads, dim))
    q_weight, k_weight = torch.randn(dim, generator=generator), torch.randn(dim, generator=generator)
    want = REFERENCE.Model(dim)(q, k, q_weight, k_weight)
    got = KERNEL.Model(dim)(q, k, q_weight, k_weight)
    for g, w, given in zip(got, want, (q, k)):
        assert g.shape == given.shape == w.shape
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    # each head on its own: the flattened row is not normalised as a whole
    row = q.reshape(tokens, -1)[0, :dim]
    torch.testing.assert_close(got[0].reshape(tokens, -1)[0, :dim],
                               row * torch.rsqrt(row.square().mean() + 1e-6) * q_weight, atol=1e-5, rtol=1e-5)


def test_flattened_heads_without_head_dim_are_one_line() -> None:
    q = torch.zeros(3, 100)
    with pytest.raises(ValueError, match="head_dim given"):
        KERNEL.launch_qk_head_norm(q, q, torch.ones(32), torch.ones(32), 1e-6)
