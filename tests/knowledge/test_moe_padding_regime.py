"""The fused MoE kernel's batch-aware tiles: the expected padded rows under uniform routing match an exact count
over every routing of a small batch; the launcher halves BLOCK_M only where that cuts the padding by more than the
set share (HALF_M_GAIN) and an N tile only where that fills idle multiprocessors (NARROW_N_GAIN); both kinds of
narrowed tiles reproduce the reference on the interpreter."""

from __future__ import annotations

import itertools

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

KERNEL = import_file(REPO / "kb/family/moe/moe_fused_experts.py", "moe_padding_regime_kernel")
REFERENCE = import_file(REPO / "problems/moe_fused_experts/reference.py", "moe_padding_regime_reference")
INPUTS = import_file(REPO / "problems/moe_fused_experts/input.py", "moe_padding_regime_inputs")


def _exact_padded_rows(tokens: int, top_k: int, experts: int, block: int) -> float:
    """Mean over every routing (each token's top_k distinct experts, all choices equally likely)."""
    choices = list(itertools.combinations(range(experts), top_k))
    total = 0
    for routing in itertools.product(choices, repeat=tokens):
        counts = [0] * experts
        for picked in routing:
            for e in picked:
                counts[e] += 1
        total += sum(-(-c // block) * block for c in counts)
    return total / len(choices) ** tokens


@pytest.mark.parametrize(("tokens", "top_k", "experts", "block"),
                         [(5, 1, 3, 2), (6, 2, 4, 4), (7, 1, 2, 4), (4, 3, 3, 2), (3, 2, 2, 16)])
def test_expected_padded_rows_is_the_mean_over_routings(tokens: int, top_k: int, experts: int, block: int) -> None:
    assert KERNEL.expected_padded_rows(tokens, top_k, experts, block) == pytest.approx(
        _exact_padded_rows(tokens, top_k, experts, block), rel=1e-9)


def test_rows_are_halved_only_where_padding_drops_by_more_than_the_gain() -> None:
    cfg = dict(KERNEL.TUNABLES, BLOCK_M=128, SMALL_MAX_PAIRS_PER_EXPERT=0, num_warps=8)
    # 668 tokens, top-2 of 8 experts: ~167 rows an expert, 256 padded in 128-row blocks, ~192 in 64-row ones
    assert KERNEL.regime_config(cfg, 668 * 2, 8, 2) is cfg  # off by default
    halved = KERNEL.regime_config({**cfg, "HALF_M_GAIN": 25, "HALF_M_WARPS": 4}, 668 * 2, 8, 2)
    assert (halved["BLOCK_M"], halved["num_warps"]) == (64, 4)
    assert KERNEL.regime_config({**cfg, "HALF_M_GAIN": 40}, 668 * 2, 8, 2)["BLOCK_M"] == 128
    # ~2000 rows an expert: under 2% padding either way, the full tiles stay
    assert KERNEL.regime_config({**cfg, "HALF_M_GAIN": 10}, 8000 * 2, 8, 2)["BLOCK_M"] == 128
    # a few rows an expert: halved repeatedly, never below 16
    assert KERNEL.regime_config({**cfg, "HALF_M_GAIN": 10}, 20 * 2, 8, 2)["BLOCK_M"] == 16
    small = {**cfg, "HALF_M_GAIN": 10, "SMALL_MAX_PAIRS_PER_EXPERT": 32, "SMALL_BLOCK_M": 32}
    assert KERNEL.regime_config(small, 20 * 2, 8, 2)["BLOCK_M"] == 32  # the decode tiles take precedence


def test_halved_tiles_reproduce_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KERNEL, "_PLANS", {})
    torch.manual_seed(5)
    inputs = INPUTS._make_inputs(num_tokens=20, hidden_size=64, intermediate_size=32, num_experts=2, top_k=1,
                                 dtype="float32", device="cpu")
    cfg = dict(KERNEL.TUNABLES, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, DOWN_BLOCK_N=32, DOWN_BLOCK_K=32,
               SMALL_MAX_PAIRS_PER_EXPERT=0, HALF_M_GAIN=10, HALF_M_WARPS=2)
    got = KERNEL.launch_moe_fused_experts(inputs["hidden"], inputs["w1"], inputs["w2"], inputs["topk_weights"],
                                          inputs["topk_ids"], cfg)
    torch.testing.assert_close(got, REFERENCE.Model()(**inputs), atol=1e-4, rtol=1e-4)
    (plan,) = KERNEL._PLANS.values()
    assert plan["bm"] == 16 and plan["gemm1"]["num_warps"] == 2 and plan["length"] % 16 == 0


def test_n_tiles_narrow_only_where_waves_leave_multiprocessors_idle() -> None:
    # 8 M blocks x 8 column tiles of 256 = 64 programs on 132 SMs: one wave half empty; 128 columns fill it
    assert KERNEL.narrowed_width(256, 8.0, 2048, 132, 20, 64) == 128
    assert KERNEL.narrowed_width(256, 8.0, 2048, 132, 0, 64) == 256  # off
    assert KERNEL.narrowed_width(256, 8.0, 2048, 132, 20, 256) == 256  # the floor
    # ~250 M blocks: 16 full waves either way, nothing to gain
    assert KERNEL.narrowed_width(256, 250.9, 2048, 132, 10, 64) == 256
    # 3 programs on 64 SMs: narrowed twice (3 -> 6 -> 12 programs, one wave each), then the floor
    assert KERNEL.narrowed_width(256, 3.0, 256, 64, 10, 64) == 64


def test_narrowed_tiles_reproduce_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU the rule reads the multiprocessor count; here it is set, so the interpreter runs the narrowed
    tiles of both GEMMs."""
    monkeypatch.setattr(KERNEL, "_PLANS", {})
    monkeypatch.setattr(KERNEL, "_multiprocessors", lambda on_gpu: 64)
    torch.manual_seed(6)
    inputs = INPUTS._make_inputs(num_tokens=12, hidden_size=128, intermediate_size=64, num_experts=2, top_k=1,
                                 dtype="float32", device="cpu")
    cfg = dict(KERNEL.TUNABLES, BLOCK_M=16, BLOCK_N=64, BLOCK_K=32, DOWN_BLOCK_N=128, DOWN_BLOCK_K=32,
               SMALL_MAX_PAIRS_PER_EXPERT=0, NARROW_N_GAIN=10)
    got = KERNEL.launch_moe_fused_experts(inputs["hidden"], inputs["w1"], inputs["w2"], inputs["topk_weights"],
                                          inputs["topk_ids"], cfg)
    torch.testing.assert_close(got, REFERENCE.Model()(**inputs), atol=1e-4, rtol=1e-4)
    (plan,) = KERNEL._PLANS.values()
    assert plan["tiles1"][0] == 32 and plan["tiles2"][0] == 64
    assert plan["grid1"] == (plan["n_blocks"] * 2,) and plan["grid2"] == (plan["n_blocks"] * 2,)


def test_decode_batches_keep_their_small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decode regime's tiles were measured on their own: the wave rule leaves them as they are."""
    monkeypatch.setattr(KERNEL, "_multiprocessors", lambda on_gpu: 132)
    cfg = dict(KERNEL.TUNABLES, NARROW_N_GAIN=20)
    bf16 = torch.bfloat16
    decode = KERNEL._plan(1, 4096, 128, 2 * 1536, 8, bf16, bf16, bf16, None, None, None, True, cfg)
    assert (decode["bm"], decode["tiles1"][0], decode["tiles2"][0]) == (
        cfg["SMALL_BLOCK_M"], cfg["SMALL_BLOCK_N"], cfg["SMALL_DOWN_BLOCK_N"])
    mid = KERNEL._plan(135, 2048, 8, 2 * 2048, 2, bf16, bf16, bf16, None, None, None, True, cfg)
    assert (mid["bm"], mid["tiles2"][0]) == (128, 128)  # 63 down programs of 256 columns: narrowed
