"""The MLA decode reference kernel on both latent-cache layouts its reference defines (CPU interpreter, float32):
paged through a block table, and packed (sequences one after another, located by their lengths or by offsets),
under each split-KV schedule; sizes read from the tensors, and given sizes that disagree refused."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

RANK, ROPE, PAGE = 32, 16, 8


def _modules():  # type: ignore[no-untyped-def]
    kernel = import_file(REPO / "kb/family/attention/attention_mla_decode.py", "mla_layouts_kernel")
    reference = import_file(REPO / "problems/attention_mla_decode/reference.py", "mla_layouts_reference")
    return kernel, reference


def _cases(heads: int) -> tuple[torch.Tensor, dict, list[tuple[str, dict]]]:
    """q, the paged inputs, and the same latents in three packed forms."""
    torch.manual_seed(0)
    lengths = torch.tensor([5, 19, 12], dtype=torch.int32)
    q = torch.randn(len(lengths), heads, RANK + ROPE) * 0.5
    blocks = torch.randn(12, PAGE, RANK + ROPE)
    table = torch.randperm(12)[:9].view(3, 3).to(torch.int32)
    rows = [blocks[table[b].long()].reshape(-1, RANK + ROPE)[: int(n)] for b, n in enumerate(lengths)]
    packed = torch.cat(rows)
    offsets = torch.zeros(len(lengths) + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(lengths, 0)
    spaced = torch.randn(packed.shape[0] + 6, RANK + ROPE)  # two stray rows before every sequence
    starts = offsets + 2 * torch.arange(1, len(lengths) + 2, dtype=torch.int32)  # the last entry is not read
    for b, n in enumerate(lengths.tolist()):
        spaced[int(starts[b]):int(starts[b]) + n] = rows[b]
    packed_forms = [
        ("lengths, [tokens, 1, width]", {"kv_cache": packed[:, None], "seq_lens": lengths}),
        ("offsets only", {"kv_cache": packed, "cu_seqlens_k": offsets}),
        ("offsets and lengths, rows between", {"kv_cache": spaced, "seq_lens": lengths, "cu_seqlens_k": starts}),
    ]
    return q, {"kv_cache": blocks, "block_tables": table, "seq_lens": lengths}, packed_forms


@pytest.mark.parametrize("split_kv, balanced, programs", [(0, 0, 2), (1, 0, 2), (1, 1, 3)],
                         ids=["no-split", "fixed-partitions", "balanced-3-programs"])
def test_mla_decode_reads_a_paged_or_packed_cache(split_kv: int, balanced: int, programs: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, reference = _modules()
    monkeypatch.setitem(kernel.TUNABLES, "SPLIT_KV", split_kv)
    monkeypatch.setitem(kernel.TUNABLES, "BALANCED", balanced)
    monkeypatch.setitem(kernel.TUNABLES, "BLOCK_N", 16)
    monkeypatch.setitem(kernel.TUNABLES, "PARTITION", 16)
    monkeypatch.setattr(kernel, "_programs", lambda device: programs)
    q, paged, packed_forms = _cases(heads=3)
    want = reference.Model(3, RANK, ROPE, PAGE)(q, **paged)
    torch.testing.assert_close(kernel.Model(kv_lora_rank=RANK)(q, **paged), want, atol=1e-5, rtol=1e-5)
    for name, inputs in packed_forms:
        torch.testing.assert_close(reference.Model(rope_dim=ROPE)(q, **inputs), want, msg=name)
        got = kernel.Model(num_heads=3, rope_dim=ROPE)(q, **inputs)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, msg=name)


def test_mla_decode_packed_balanced_over_two_head_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 heads = 2 head blocks of 16: pieces of several groups per program land in distinct workspace slots."""
    kernel, reference = _modules()
    monkeypatch.setitem(kernel.TUNABLES, "BLOCK_N", 16)
    monkeypatch.setitem(kernel.TUNABLES, "BLOCK_H", 16)
    monkeypatch.setattr(kernel, "_programs", lambda device: 5)
    q, paged, packed_forms = _cases(heads=20)
    want = reference.Model(kv_lora_rank=RANK)(q, **paged)
    torch.testing.assert_close(kernel.Model(kv_lora_rank=RANK)(q, **packed_forms[0][1]), want, atol=1e-5, rtol=1e-5)


def test_mla_decode_sizes_come_from_the_tensors() -> None:
    kernel, reference = _modules()
    q, paged, packed_forms = _cases(heads=2)
    packed = packed_forms[0][1]
    for module in (kernel, reference):
        with pytest.raises(ValueError, match="disagree"):
            module.Model(num_heads=4)(q, **paged)
        with pytest.raises(ValueError, match="disagree"):
            module.Model(kv_lora_rank=RANK, rope_dim=ROPE + 1)(q, **packed)
        with pytest.raises(ValueError, match="disagree"):
            module.Model(block_size=PAGE * 2)(q, **paged)
        with pytest.raises(ValueError, match="packed"):
            module.Model(kv_lora_rank=RANK, block_size=PAGE)(q, **packed)
    # no size given: the rope part is DeepSeek's 64 wide, the default scale is 1 / sqrt(latent width)
    wide_q = torch.randn(1, 2, 512 + 64)
    cache = torch.randn(7, 512 + 64)
    lengths = torch.tensor([7], dtype=torch.int32)
    plain = reference.Model()(wide_q, cache, seq_lens=lengths)
    assert plain.shape == (1, 2, 512)
    torch.testing.assert_close(reference.Model(2, 512, 64, softmax_scale=576 ** -0.5)(wide_q, cache,
                                                                                           seq_lens=lengths), plain)


def test_mla_decode_plans_follow_tunables_and_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher caches its tiles per batch geometry and tunables' values, the model its sizes per tensor
    shapes: TUNABLES edited in place (as a search does), another cache layout and a smaller batch through the
    same model each get a plan of their own and the reference's output."""
    kernel, reference = _modules()
    monkeypatch.setitem(kernel.TUNABLES, "BLOCK_N", 16)
    monkeypatch.setattr(kernel, "_programs", lambda device: 3)
    monkeypatch.setattr(kernel, "_PLANS", {})
    q, paged, packed_forms = _cases(heads=3)
    want = reference.Model(3, RANK, ROPE, PAGE)(q, **paged)
    model = kernel.Model(kv_lora_rank=RANK)
    for split in (0, 1):
        monkeypatch.setitem(kernel.TUNABLES, "SPLIT_KV", split)
        torch.testing.assert_close(model(q, **paged), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model(q, **packed_forms[0][1]), want, atol=1e-5, rtol=1e-5)
    two = {"kv_cache": paged["kv_cache"], "block_tables": paged["block_tables"][:2], "seq_lens": paged["seq_lens"][:2]}
    torch.testing.assert_close(model(q[:2], **two), want[:2], atol=1e-5, rtol=1e-5)
    assert [key[:2] + key[4:5] for key in kernel._PLANS] == [(3, 3, True)] * 2 + [(3, 3, False), (2, 3, True)]
    assert len(model._sizes) == 3
