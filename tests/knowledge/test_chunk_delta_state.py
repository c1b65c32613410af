"""The chunked gated delta rule's state-pass kernel against a plain PyTorch recurrence over chunks: a partial
last chunk, grouped key heads, no decay, no initial state, a slot pool in place or returned (CPU interpreter,
float32), and calls that do not fit rejected with one line."""

from __future__ import annotations

import math
from types import ModuleType

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO


@pytest.fixture(scope="module")
def module() -> ModuleType:
    return import_file(REPO / "kb/family/linear_attention/linear_attn_chunk_delta_state.py", "chunk_state_kernel")


@pytest.fixture(params=["interpreter launch", "compiled launch"])
def kernel(module: ModuleType, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The kernel as the interpreter launches it (one column slice, the slot copy in tiles of slots), and as a
    GPU would (BLOCK_V 16: three slices of v_dim 40, the last one partial; one slot per copy program)."""
    if request.param == "compiled launch":
        monkeypatch.setattr(module, "_INTERPRETED", False)  # fp32 operands: the interpreter's dot is right
        monkeypatch.setitem(module.TUNABLES, "BLOCK_V", 16)
    return module


def chunk_states(k, w, u, g, state, chunk):  # type: ignore[no-untyped-def]
    """h per chunk, v_new and the final state of each sequence (state [batch, heads, k_dim, v_dim] or None)."""
    batch, tokens, k_heads, k_dim = k.shape
    heads, v_dim = u.shape[2], u.shape[3]
    S = state.clone() if state is not None else torch.zeros(batch, heads, k_dim, v_dim)
    keys = k.repeat_interleave(heads // k_heads, dim=2)
    h = torch.empty(batch, math.ceil(tokens / chunk), heads, k_dim, v_dim)
    v_new = torch.empty_like(u)
    for c, t0 in enumerate(range(0, tokens, chunk)):
        t1 = min(t0 + chunk, tokens)
        h[:, c] = S
        v = u[:, t0:t1] - torch.einsum("bthk,bhkv->bthv", w[:, t0:t1], S)
        v_new[:, t0:t1] = v
        if g is not None:
            g_last = g[:, t1 - 1]                                      # [batch, heads]
            diff = g_last[:, None] - g[:, t0:t1]                        # [batch, tokens, heads]
            v = v * torch.where(diff <= 0, diff.clamp(max=0).exp(), torch.zeros_like(diff))[..., None]
            S = S * g_last.exp()[..., None, None]
        S = S + torch.einsum("bthk,bthv->bhkv", keys[:, t0:t1], v)
    return h, v_new, S


def _inputs(batch: int, tokens: int, k_heads: int, heads: int, k_dim: int = 32, v_dim: int = 40):
    torch.manual_seed(tokens + heads)
    k = torch.randn(batch, tokens, k_heads, k_dim) * 0.3
    w = torch.randn(batch, tokens, heads, k_dim) * 0.3
    u = torch.randn(batch, tokens, heads, v_dim)
    g = -torch.rand(batch, tokens, heads)  # not a cumulative sum: some exponents are positive (weight 0)
    return k, w, u, g


@pytest.mark.parametrize("tokens, chunk, k_heads, heads, decay", [
    (37, 16, 1, 2, True),   # partial last chunk, two value heads per key head
    (48, 24, 2, 2, False),  # a chunk size that is not a power of two, no decay
])
def test_kernel_matches_the_recurrence_over_chunks(kernel: ModuleType, tokens: int, chunk: int, k_heads: int,
                                                   heads: int, decay: bool) -> None:
    k, w, u, g = _inputs(2, tokens, k_heads, heads)
    g = g if decay else None
    state = torch.randn(2, heads, 32, 40)
    want = chunk_states(k, w, u, g, state, chunk)
    got = kernel.Model(chunk_size=chunk)(k, w, u, g, state.clone())
    for name, a, b in zip(("h", "v_new", "final_state"), got, want):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4, msg=name)
    h, _, final = kernel.Model(chunk_size=chunk)(k, w, u, g)  # no initial state: zeros
    assert torch.equal(h[:, 0], torch.zeros_like(h[:, 0]))
    torch.testing.assert_close(final, chunk_states(k, w, u, g, None, chunk)[2], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("inplace", [False, True])
def test_slot_pool_returned_or_written_in_place(kernel: ModuleType, inplace: bool) -> None:
    k, w, u, g = _inputs(2, 20, 2, 4)
    pool = torch.randn(4, 6, 4, 32, 40).select(1, 2)  # 4 slots that are not contiguous blocks
    slots = torch.tensor([3, 0], dtype=torch.int32)
    given = pool.clone()
    h, v_new, final = kernel.Model(chunk_size=8, inplace_final_state=inplace)(k, w, u, g, pool, slots)
    want_h, want_v, want_final = chunk_states(k, w, u, g, given[slots.long()], 8)
    torch.testing.assert_close(h, want_h, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(v_new, want_v, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(final[slots.long()], want_final, atol=1e-4, rtol=1e-4)
    assert torch.equal(final[[1, 2]], given[[1, 2]])  # the slots no sequence owns are carried over
    assert (final is pool) == inplace and torch.equal(pool, given) != inplace


def test_calls_that_do_not_fit_fail_with_one_line(module: ModuleType) -> None:
    kernel = module
    k, w, u, g = _inputs(1, 8, 1, 2)
    pool = torch.randn(3, 2, 32, 40)
    for args in [(k, w, u, g, pool),  # a pool of 3 for 1 sequence, no indices
                 (k, u, w, g),  # values where keys belong
                 (k, w, u, g[..., :1]),
                 (k, w, u, g, pool, torch.tensor([0.0]))]:
        with pytest.raises(ValueError):
            kernel.Model()(*args)


def test_more_key_heads_than_value_heads_reads_the_first(module: ModuleType) -> None:
    """No model has that, but a probe shrunk for the CPU can (value heads halved, key heads not)."""
    k, w, u, g = _inputs(1, 20, 3, 2)
    got = module.Model(chunk_size=8)(k, w, u, g)
    want = chunk_states(k[:, :, :2], w, u, g, None, 8)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
