"""The sampling reference kernel's split-row paths are exact on data the suite's inputs do not reach.

The evaluator's smoke shapes (bf16-valued logits, default tunables) go through one path; here small slices
force several slices per row, the listed (EARLY_WRITE) path with overflowing lists, thresholds below the
pivot window, values off the bf16 grid, ties, fp16, a strided view, and the one-program-per-row kernel.
"""

from __future__ import annotations

import zlib
from types import ModuleType

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from aka_tui.knowledge.store import default_kb_dir
from tests.conftest import PROBLEMS

KERNEL = default_kb_dir() / "family" / "sampling" / "sampling_top_k_top_p.py"



@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    module = import_file(KERNEL, "sampling_top_k_top_p_under_test")
    module._MIN_SLICE = 64  # let the launcher use slices far smaller than a row
    return module


def _inputs(kind: str, batch: int, vocab: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    snap_top_p = import_file(PROBLEMS / "sampling_top_k_top_p" / "input.py", "sampling_inputs")._snap_top_p
    base = torch.randn(batch, 2 * vocab, generator=gen)
    logits = {
        "bf16": (base * 3).to(torch.bfloat16).float(),
        "fp32": base * 3,  # off the bf16 grid: every bracket needs the search
        "ties": (base * 2).round() * 0.5,
        "wide": base * 40,  # thresholds below the pivot window
        "fp16": (base * 3).to(torch.float16),
    }[kind][:, ::2]  # a strided view
    ks = torch.tensor([1, 3, 20, 100, vocab, vocab + 7, 0])
    top_k = ks[torch.randint(0, len(ks), (batch,), generator=gen)].to(torch.int32)
    target = torch.rand(batch, generator=gen, dtype=torch.float64) * 0.48 + 0.5
    top_p = snap_top_p(logits.float(), top_k.clamp(min=1), target).float()
    top_p = torch.where(torch.rand(batch, generator=gen) < 0.25, torch.ones_like(top_p), top_p)
    return logits, top_k, top_p


CONFIGS = {
    "lists": {"SLICE": 64, "MIN_PROGRAMS": 0, "TOPK_CELL": 16, "TOPK_PIVOTS": 4, "TOPP_CELL": 16,
              "TOPP_PIVOTS": 8, "EARLY_WRITE": 1, "CAND_CAP": 32},
    "compacted": {"SLICE": 128, "MIN_PROGRAMS": 0, "TOPK_CELL": 128, "TOPK_PIVOTS": 2, "TOPP_CELL": 64,
                  "TOPP_PIVOTS": 4, "EARLY_WRITE": 0, "SEARCH_PIVOTS": 8, "SEARCH_BLOCK": 128},
    "row_per_program": {"SPLIT_ROWS": 0},
}


@pytest.mark.slow
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("kind", ["bf16", "fp32", "ties", "wide", "fp16"])
def test_split_row_paths_match_the_reference(kernel: ModuleType, config: str, kind: str) -> None:
    reference = import_file(PROBLEMS / "sampling_top_k_top_p" / "reference.py", "sampling_reference").Model
    gen = torch.Generator().manual_seed(zlib.crc32(f"{config}/{kind}".encode()))
    batch, vocab = 5, 700
    logits, top_k, top_p = _inputs(kind, batch, vocab, gen)
    expected = reference(vocab)(logits, top_k, top_p)
    got = kernel.launch_sampling_top_k_top_p(logits, top_k, top_p, {**kernel.TUNABLES, **CONFIGS[config]})
    assert got.dtype == expected.dtype
    same = (got == expected) | (torch.isinf(got) & torch.isinf(expected) & (got < 0) & (expected < 0))
    assert bool(same.all()), f"rows differ: {(~same).any(dim=1).nonzero().flatten().tolist()}"


@pytest.mark.parametrize("kind", ["fp32", "ties", "fp16"])
def test_top_p_over_the_whole_row_matches_the_reference(kernel: ModuleType, kind: str) -> None:
    """renormalize=False: top-p on the whole row's softmax, with top-k on and off and top-p off in some rows;
    exact against the reference's mode (ties kept whole, as in the renormalised mode)."""
    reference = import_file(PROBLEMS / "sampling_top_k_top_p" / "reference.py", "sampling_reference").Model
    gen = torch.Generator().manual_seed(zlib.crc32(f"whole-row/{kind}".encode()))
    batch, vocab = 8, 700
    logits, top_k, _ = _inputs(kind, batch, vocab, gen)
    # targets between the whole row's cumulative masses of neighbouring sorted values, so that float rounding
    # cannot move the boundary
    probs = torch.softmax(logits.double(), dim=-1).sort(dim=-1, descending=True).values.cumsum(dim=-1)
    at = torch.randint(0, 40, (batch,), generator=gen)
    top_p = ((probs.gather(1, at[:, None]) + probs.gather(1, at[:, None] + 1)) / 2).squeeze(1).float()
    top_p[0] = 1.0
    expected = reference(vocab, renormalize=False)(logits, top_k, top_p)
    got = kernel.Model(vocab, renormalize=False)(logits, top_k, top_p)
    same = (got == expected) | (torch.isinf(got) & torch.isinf(expected) & (got < 0) & (expected < 0))
    assert bool(same.all()), f"rows differ: {(~same).any(dim=1).nonzero().flatten().tolist()}"
    renormalised = reference(vocab)(logits, top_k, top_p)
    assert not torch.equal(renormalised.isinf(), expected.isinf())  # the two modes keep different sets here


@pytest.mark.parametrize("config", ["default", *CONFIGS])
@pytest.mark.parametrize("ties", [False, True])
def test_masked_vocabulary_entries_do_not_change_which_logits_survive(kernel: ModuleType, config: str,
                                                                       ties: bool) -> None:
    """-inf logits (a masked vocabulary: structured output, banned tokens) at densities from none to nearly the
    whole row, a masked half at the front (whole slices of -inf: their max is -inf, and exp(x - max) was NaN,
    so top-p rows kept far too many logits)."""
    reference = import_file(PROBLEMS / "sampling_top_k_top_p" / "reference.py", "sampling_reference").Model
    gen = torch.Generator().manual_seed(9 + ties)
    vocab = 700
    logits = torch.randn(6, vocab, generator=gen) * 3
    if ties:
        logits = (logits * 2).round() * 0.5
    density = torch.tensor([0.0, 0.3, 0.9, 0.995, 0.5, 0.99])[:, None]
    masked = torch.rand(6, vocab, generator=gen) < density
    masked[4, :350], masked[4, 350:] = True, False
    masked[:, -1] = False  # one finite logit a row at least
    logits[masked] = float("-inf")
    top_k = torch.tensor([vocab, 3, 20, vocab, 1, 100], dtype=torch.int32)
    top_p = torch.tensor([0.8, 0.9, 1.0, 0.5, 0.7, 0.95])
    cfg = {**kernel.TUNABLES, **CONFIGS.get(config, {})}
    got = kernel.launch_sampling_top_k_top_p(logits, top_k, top_p, cfg)
    expected = reference(vocab)(logits, top_k, top_p)
    same = (got == expected) | (torch.isinf(got) & torch.isinf(expected) & (got < 0) & (expected < 0))
    assert bool(same.all()), f"rows differ: {(~same).any(dim=1).nonzero().flatten().tolist()}"
