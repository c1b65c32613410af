"""The KB cache write on each cache layout it takes (token-major, vLLM's head-major values and split keys, mixed),
on Triton's interpreter against the suite reference (which takes the same layouts), padding slots skipped."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TRITON_INTERPRET", "1")

from aka_tui.bench.problem.module_loading import import_file  # noqa: E402
from tests.conftest import PROBLEMS, REPO  # noqa: E402

KERNEL = import_file(REPO / "kb" / "family" / "kv_cache" / "kv_cache_write.py", "kv_cache_layouts_kernel")
REFERENCE = import_file(PROBLEMS / "kv_cache_write" / "reference.py", "kv_cache_layouts_reference")


def _cache(layout: str, blocks: int, block_size: int, heads: int, dim: int) -> torch.Tensor:
    shape = {"token-major": (blocks, block_size, heads, dim), "head-major": (blocks, heads, dim, block_size),
             "split": (blocks, heads, dim // 8, block_size, 8)}[layout]
    return torch.randn(shape).to(torch.bfloat16)


@pytest.mark.parametrize("key_layout, value_layout", [("token-major", "token-major"), ("split", "head-major"),
                                                      ("token-major", "head-major"), ("split", "token-major")])
@pytest.mark.parametrize("contig_rows", [False, True])
def test_each_cache_layout_is_written_as_the_reference_writes_it(key_layout: str, value_layout: str,
                                                                 contig_rows: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Head size 16 = block size 16 too: a head-major cache's slot axis then has the row strides of a token-major
    one, which must not take the contiguous-rows path."""
    monkeypatch.setitem(KERNEL.TUNABLES, "CONTIG_ROWS", contig_rows)
    generator = torch.Generator().manual_seed(3)
    tokens, heads, dim, blocks, block_size = 7, 2, 16, 3, 16
    key = torch.randn(tokens, heads, dim, generator=generator).to(torch.bfloat16)
    value = torch.randn(tokens, heads, dim, generator=generator).to(torch.bfloat16)
    slots = torch.randperm(blocks * block_size, generator=generator)[:tokens]
    slots[2] = slots[5] = -1
    caches = (_cache(key_layout, blocks, block_size, heads, dim), _cache(value_layout, blocks, block_size, heads, dim))
    want = REFERENCE.Model()(key, value, caches[0].clone(), caches[1].clone(), slots)
    got = KERNEL.Model()(key, value, caches[0].clone(), caches[1].clone(), slots)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    assert not torch.equal(want[0], caches[0])  # the write happened


def test_a_cache_in_no_known_layout_is_one_line() -> None:
    key = torch.zeros(2, 2, 16)
    with pytest.raises(ValueError, match="none of"):
        KERNEL.Model()(key, key, torch.zeros(3, 16, 4, 16), torch.zeros(3, 16, 2, 16), torch.tensor([0, 1]))


def _fp8_write(seed: int, heads: int, key_layout: str,
               value_layout: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
    """key and value (6 tokens of `heads` heads of 16, values to 3 sigma), slots with one padding token, and fp8
    caches of two 16-slot blocks in the given layouts."""
    generator = torch.Generator().manual_seed(seed)
    tokens, dim, blocks, block_size = 6, 16, 2, 16
    key = (3 * torch.randn(tokens, heads, dim, generator=generator)).to(torch.bfloat16)
    value = (3 * torch.randn(tokens, heads, dim, generator=generator)).to(torch.bfloat16)
    slots = torch.randperm(blocks * block_size, generator=generator)[:tokens]
    slots[1] = -1
    caches = tuple(_cache(layout, blocks, block_size, heads, dim).to(torch.float8_e4m3fn)
                   for layout in (key_layout, value_layout))
    return key, value, slots, caches


@pytest.mark.parametrize("key_layout, value_layout", [("token-major", "token-major"), ("split", "head-major")])
def test_scales_divide_before_the_cast_to_an_fp8_cache(key_layout: str, value_layout: str) -> None:
    """With k_scale and v_scale the values are divided in float32 and cast to the fp8 cache, as the reference
    does; without them the same call leaves out the division (scale 1 writes the same codes)."""
    key, value, slots, caches = _fp8_write(4, 2, key_layout, value_layout)
    for scales in ((torch.tensor([0.37]), torch.tensor([1.9])), (torch.tensor(1.0), torch.tensor(1.0))):
        want = REFERENCE.Model()(key, value, caches[0].clone(), caches[1].clone(), slots, *scales)
        got = KERNEL.Model()(key, value, caches[0].clone(), caches[1].clone(), slots, *scales)
        for g, w in zip(got, want):
            assert torch.equal(g.view(torch.uint8), w.view(torch.uint8))
    unscaled = KERNEL.Model()(key, value, caches[0].clone(), caches[1].clone(), slots)
    assert all(torch.equal(u.view(torch.uint8), g.view(torch.uint8)) for u, g in zip(unscaled, got))


@pytest.mark.parametrize("key_layout, value_layout", [("token-major", "token-major"), ("split", "head-major")])
@pytest.mark.parametrize("contig_rows", [False, True])
def test_scales_per_head_token_or_element_divide_each_value_by_its_own(key_layout: str, value_layout: str,
                                                                      contig_rows: bool,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Scales per KV head (1-D, vLLM's per-head form), per token ([T, 1, 1]), per element of a head ([head_dim],
    broadcasting over the last axis) or mixed with a per-tensor one: the kernel divides every value by the scale
    the reference's broadcasting gives it (fp8 codes bit-exact); a scale that fits no axis is one line."""
    monkeypatch.setitem(KERNEL.TUNABLES, "CONTIG_ROWS", contig_rows)
    key, value, slots, caches = _fp8_write(5, 3, key_layout, value_layout)
    generator = torch.Generator().manual_seed(6)
    per_head = torch.tensor([0.3, 1.7, 0.9])
    per_token = torch.rand(key.shape[0], 1, 1, generator=generator) + 0.2
    per_dim = torch.rand(key.shape[2], generator=generator) + 0.2
    for scales in ((per_head, per_head.flip(0)), (per_token, torch.tensor([0.6])), (torch.tensor(0.4), per_dim)):
        want = REFERENCE.Model()(key, value, caches[0].clone(), caches[1].clone(), slots, *scales)
        got = KERNEL.Model()(key, value, caches[0].clone(), caches[1].clone(), slots, *scales)
        for g, w in zip(got, want):
            assert torch.equal(g.view(torch.uint8), w.view(torch.uint8))
        once = KERNEL.Model()(key, value, caches[0].clone(), caches[1].clone(), slots, torch.tensor(0.4),
                              torch.tensor(0.4))
        assert not all(torch.equal(o.view(torch.uint8), g.view(torch.uint8)) for o, g in zip(once, got))
    with pytest.raises(ValueError, match="does not broadcast"):
        KERNEL.Model()(key, value, caches[0].clone(), caches[1].clone(), slots, torch.ones(5), torch.ones(5))
