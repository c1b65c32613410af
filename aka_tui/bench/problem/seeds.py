"""Seeds derived from (problem, shape, case) so every failure can be replayed exactly."""

from __future__ import annotations

import hashlib


def derive_seed(problem: str, shape_id: str, case: int, salt: str = "") -> int:
    """A stable 31-bit seed; `salt` separates correctness cases from timing input sets."""
    digest = hashlib.sha256(f"{problem}/{shape_id}/{case}/{salt}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF
