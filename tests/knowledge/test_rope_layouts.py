"""The KB RoPE on heads split ([T, H, D]) and flattened per token ([T, H * D], head_size given, as vLLM's
rotary embedding takes them), on Triton's interpreter against the suite reference (which takes both)."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import PROBLEMS, REPO

KERNEL = import_file(REPO / "kb" / "family" / "rope" / "rope.py", "rope_layouts_kernel")
REFERENCE = import_file(PROBLEMS / "rope" / "reference.py", "rope_layouts_reference")


@pytest.mark.parametrize("single_launch", [True, False])
@pytest.mark.parametrize("flattened", [False, True])
def test_heads_split_or_flattened_are_rotated_per_head(flattened: bool, single_launch: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KERNEL.TUNABLES, "SINGLE_LAUNCH", single_launch)
    generator = torch.Generator().manual_seed(7)
    tokens, q_heads, kv_heads, size, rotary, positions = 5, 4, 2, 32, 16, 40
    fused = torch.randn(tokens, (q_heads + 2 * kv_heads) * size, generator=generator)
    q, k = fused[:, :q_heads * size], fused[:, q_heads * size:(q_heads + kv_heads) * size]  # strided rows
    if not flattened:
        q, k = q.unflatten(1, (q_heads, size)), k.unflatten(1, (kv_heads, size))
    cache = torch.randn(positions, rotary, generator=generator)
    pos = torch.randint(0, positions, (tokens,), generator=generator)
    want = REFERENCE.Model(size, rotary)(pos, q, k, cache)
    got = KERNEL.Model(size, rotary)(pos, q, k, cache)
    for g, w, given in zip(got, want, (q, k)):
        assert g.shape == given.shape == w.shape
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    # the second head of token 0 is rotated with token 0's row: a flattened row is not one long head
    head = q.reshape(tokens, -1)[0, size:2 * size]
    cos, sin = cache[pos[0], :rotary // 2], cache[pos[0], rotary // 2:]
    x1, x2 = head[:rotary // 2], head[rotary // 2:rotary]
    torch.testing.assert_close(got[0].reshape(tokens, -1)[0, size:2 * size],
                               torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, head[rotary:]]),
                               atol=1e-5, rtol=1e-5)


def test_flattened_heads_without_head_size_are_one_line() -> None:
    q = torch.zeros(3, 100)
    with pytest.raises(ValueError, match="head_size given"):
        KERNEL.launch_rope(torch.zeros(3, dtype=torch.long), q, q, torch.zeros(4, 16), 16)


@pytest.mark.parametrize("single_launch", [True, False])
def test_three_position_streams_rotate_each_band_at_its_sections_position(single_launch: bool,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Multimodal rotary: positions [3, T] and sections (2, 3, 3) of the 8 bands; flattened heads."""
    monkeypatch.setitem(KERNEL.TUNABLES, "SINGLE_LAUNCH", single_launch)
    generator = torch.Generator().manual_seed(8)
    tokens, q_heads, kv_heads, size, rotary, positions = 6, 4, 2, 32, 16, 50
    q = torch.randn(tokens, q_heads * size, generator=generator)
    k = torch.randn(tokens, kv_heads * size, generator=generator)
    cache = torch.randn(positions, rotary, generator=generator)
    pos = torch.randint(0, positions, (3, tokens), generator=generator)
    want = REFERENCE.Model(size, rotary, [2, 3, 3])(pos, q, k, cache)
    got = KERNEL.Model(size, rotary, [2, 3, 3])(pos, q, k, cache)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    # band 4 (second section) of token 1 reads the height stream's row
    x1, x2 = q[1, 4], q[1, 4 + rotary // 2]
    cos, sin = cache[pos[1, 1], 4], cache[pos[1, 1], 4 + rotary // 2]
    torch.testing.assert_close(got[0][1, 4], x1 * cos - x2 * sin, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="three sections"):
        KERNEL.Model(size, rotary, [2, 3, 2])(pos, q, k, cache)
