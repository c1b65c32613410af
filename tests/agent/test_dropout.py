"""Optimization dropout: seeded, rate p, never the incumbent or the latest win, always a tactic left."""

from __future__ import annotations

import pytest

from aka_tui.agent.dropout import MemoryRecord, apply_dropout, dropout_rng


def _memory(n: int) -> list[MemoryRecord]:
    return [MemoryRecord(i, f"try {i}", 0.1 * i, {"BLOCK": i}, incumbent=(i == 3), latest_win=(i == 5))
            for i in range(1, n + 1)]


def test_incumbent_and_latest_win_are_never_masked() -> None:
    for iteration in range(50):
        result = apply_dropout(_memory(8), ["BLOCK", "num_warps"], 0.9, dropout_rng(1, iteration))
        kept = {r.iteration for r in result.kept}
        assert {3, 5} <= kept


def test_rate_is_about_p_and_reproducible() -> None:
    masked = 0
    total = 0
    for iteration in range(400):
        result = apply_dropout(_memory(10), [], 0.5, dropout_rng(7, iteration))
        masked += len(result.masked)
        total += 8  # 10 records minus the two protected ones
    assert 0.45 < masked / total < 0.55
    a = apply_dropout(_memory(10), ["x", "y", "z"], 0.5, dropout_rng(7, 3))
    b = apply_dropout(_memory(10), ["x", "y", "z"], 0.5, dropout_rng(7, 3))
    assert a.record() == b.record()


def test_tactics_masked_but_never_all_and_p_zero_masks_nothing() -> None:
    for iteration in range(100):
        result = apply_dropout([], ["a", "b", "c"], 0.95, dropout_rng(2, iteration))
        assert result.tactics_kept
    none = apply_dropout(_memory(6), ["a", "b"], 0.0, dropout_rng(2, 0))
    assert not none.masked and not none.tactics_masked
    with pytest.raises(ValueError):
        apply_dropout([], [], 1.0, dropout_rng(0, 0))
