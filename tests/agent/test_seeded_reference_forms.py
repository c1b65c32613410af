"""The compiler seed end to end on reference forms inductor alone leaves to libraries or that a candidate is not
given: complex arithmetic, a size read back on the host, a table built at init outside the state dict. A file of
their own, so that test workers share them with the other seed tests (`--dist loadfile`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.optimize_runs import UNSEEN, started_correct_and_real


@pytest.mark.slow
def test_optimize_seeds_complex_arithmetic_as_real_pairs(tmp_path: Path) -> None:
    """Inductor generates no code for complex tensors (a rotary embedding as complex multiplication would be
    library calls); the seed lowers the same graph with each complex tensor as a real pair, one kernel a program
    (one program for each head size)."""
    started_correct_and_real(UNSEEN / "complex_rotation", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)")
    kernel = (next((tmp_path / "sessions").iterdir()) / "iterations" / "0001" / "kernel.py").read_text()
    assert kernel.count("@triton.jit") == kernel.count("\ndef _program_") == 2


@pytest.mark.slow
def test_a_seed_sized_by_a_host_read_compiles_for_the_gpu(tmp_path: Path) -> None:
    """The reference reads a length back on the host, so the seed does too: its first kernel's output sizes the
    second launch. The GPU compile check (no kernel runs there) is given that value from an interpreted run,
    compiles both kernels, and the start is accepted."""
    started_correct_and_real(UNSEEN / "longest_prefix_mean", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)", "--compile-for", "sm_90")
    session = next((tmp_path / "sessions").iterdir())
    events = (session / "events.jsonl").read_text()
    assert "does not compile" not in events and '"accepted": true' in events


@pytest.mark.slow
def test_optimize_seeds_a_reference_that_builds_a_table_at_init(tmp_path: Path) -> None:
    """A rotary cos/sin table built at init outside the state dict (no candidate is given it): the seed's Model
    builds it with the reference's own code, copied in as a function, and its kernels read it."""
    started_correct_and_real(UNSEEN / "init_table_rope", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)")
    kernel = (next((tmp_path / "sessions").iterdir()) / "iterations" / "0001" / "kernel.py").read_text()
    assert "def _seed_reference():" in kernel and "_TABLES = ('cos_sin_cache',)" in kernel
    assert "inputs['self.cos_sin_cache']" in kernel
