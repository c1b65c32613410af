"""Optimization dropout: at each revise step, hide a random fraction of the agent's memory and tactics.

The incumbent and the latest win are never masked (they anchor the search); everything else is masked with
probability p, from a generator seeded per (session seed, iteration), so a run is reproducible and the
iteration record says exactly what the proposer did not see.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class MemoryRecord:
    """One earlier attempt with its measured outcome."""

    iteration: int
    summary: str
    s_op: float | None
    tactics: dict[str, Any]
    incumbent: bool = False
    latest_win: bool = False


@dataclass(frozen=True)
class DropoutResult:
    kept: list[MemoryRecord]
    masked: list[MemoryRecord]
    tactics_kept: list[str]
    tactics_masked: list[str]

    def record(self) -> dict[str, Any]:
        """What goes into the iteration's record."""
        return {"masked_iterations": [m.iteration for m in self.masked], "masked_tactics": list(self.tactics_masked)}


def dropout_rng(seed: int, iteration: int) -> random.Random:
    return random.Random(seed * 1_000_003 + iteration)


def apply_dropout(memory: Sequence[MemoryRecord], tactics: Sequence[str], p: float, rng: random.Random,
                  protected_tactics: Sequence[str] = ()) -> DropoutResult:
    """Mask each unprotected record and tactic independently with probability p (0 ≤ p < 1)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout p must be in [0, 1), got {p}")
    kept, masked = [], []
    for record in memory:
        if record.incumbent or record.latest_win or rng.random() >= p:
            kept.append(record)
        else:
            masked.append(record)
    tactics_kept, tactics_masked = [], []
    for tactic in tactics:
        if tactic in protected_tactics or rng.random() >= p:
            tactics_kept.append(tactic)
        else:
            tactics_masked.append(tactic)
    if tactics and not tactics_kept:  # never leave the proposer with nothing to change
        tactics_kept.append(tactics_masked.pop(rng.randrange(len(tactics_masked))))
    return DropoutResult(kept, masked, tactics_kept, tactics_masked)
