"""The compiler seed end to end: `aka optimize` on made-up problems no KB kernel matches starts from inductor's
Triton lowered into a standalone candidate, correct and real on every shape (each a few tens of seconds on a CPU:
kept apart from the transfer tests so test workers share them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.optimize_runs import UNSEEN, started_correct_and_real


@pytest.mark.slow
def test_optimize_seeds_from_the_compiler_when_no_kb_kernel_matches(tmp_path: Path) -> None:
    started_correct_and_real(UNSEEN / "centered_swish", tmp_path / "sessions", "starting point: compiler seed",
                              "compiler seed (inductor)")
    kernel = (next((tmp_path / "sessions").iterdir()) / "iterations" / "0001" / "kernel.py").read_text()
    assert "@triton.jit" in kernel and "TUNABLES = {" in kernel and "async_compile" not in kernel
    assert "triton_heuristics" not in kernel and ".run(" not in kernel  # our launchers, not inductor's runtime


@pytest.mark.slow
def test_optimize_seeds_a_top_k_threshold_with_its_own_selection(tmp_path: Path) -> None:
    """torch.topk is a library call under inductor; the seed's selection rounds make the start real (published
    format, no roofline file), and the interpreter runs inductor's NaN-aware max/min as its native reductions
    (a custom combine function there took over 300 s on this problem's smoke shape). The transfer search is
    off: the KB's top-k / top-p filter takes a k for every row from its init arguments too."""
    result = started_correct_and_real(UNSEEN / "row_top_k_mask", tmp_path / "sessions",
                                       "starting point: compiler seed", "compiler seed (inductor)",
                                       "--transfer-budget", "0")
    assert all(name.startswith("_seed_kernel") for s in result["shapes"] for name in s["audit"]["own_kernels"])


@pytest.mark.slow
def test_optimize_seeds_a_projection_with_the_seeds_own_gemm(tmp_path: Path) -> None:
    """Inductor calls a library GEMM for a projection; the seed computes it with its own Triton GEMM and keeps
    inductor's epilogue kernel, so the start is real (published format, no roofline file). The transfer search
    is off: the KB's GEMM has a gate epilogue too."""
    result = started_correct_and_real(UNSEEN / "gated_projection", tmp_path / "sessions",
                                       "the seed's own GEMM for addmm", "compiler seed (inductor)",
                                       "--transfer-budget", "0")
    own = {name for s in result["shapes"] for name in s["audit"]["own_kernels"]}
    assert "_seed_matmul_kernel" in own and len(own) == 2, own  # the GEMM and inductor's gated epilogue


@pytest.mark.slow
def test_optimize_seeds_a_blockwise_readout_with_a_folded_grid_and_a_size_power(tmp_path: Path) -> None:
    """A chunked recurrence's output pass (einsums inside a Python loop over blocks): inductor lowers its
    transposes to kernels launched on a y axis folded into z (Grid2DWithYZOverflow) and the scale `dim ** -0.5`
    of a symbolic size to libdevice.pow; the seed launches the one and the interpreter's stand-in runs the other,
    so the start is real (with the seed's own GEMM for the products)."""
    result = started_correct_and_real(UNSEEN / "chunk_readout", tmp_path / "sessions",
                                       "the seed's own GEMM for bmm", "compiler seed (inductor)")
    assert all(name.startswith("_seed_") for s in result["shapes"] for name in s["audit"]["own_kernels"])


@pytest.mark.slow
def test_optimize_seeds_a_sorting_top_p_mask_with_its_own_ranking_and_scan(tmp_path: Path) -> None:
    """A top-k / top-p mask written with torch.sort, a softmax, a cumulative sum and a scatter: inductor calls a
    library sort; the seed ranks instead (its own reduction kernel) and keeps inductor's scan with its combine
    function, so the start is real. The transfer search is off: the KB's filter has this top-p mode too."""
    result = started_correct_and_real(UNSEEN / "nucleus_mask", tmp_path / "sessions",
                                       "starting point: compiler seed", "compiler seed (inductor)",
                                       "--transfer-budget", "0")
    assert all(name.startswith("_seed_") for s in result["shapes"] for name in s["audit"]["own_kernels"])


@pytest.mark.slow
def test_optimize_seeds_a_scaled_fp8_cache_write(tmp_path: Path) -> None:
    """Keys and values divided by a scale and cast to fp8 codes at their cache slots, seeded with the transfer
    search off (the KB's cache write scales too): checked on the CPU interpreter's fp8 casts (rounded to nearest
    even once the loader has corrected them)."""
    started_correct_and_real(UNSEEN / "scaled_slot_store", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)", "--transfer-budget", "0")


def test_an_in_place_reference_returning_its_inputs_is_seeded(tmp_path: Path) -> None:
    """A cache write in place into split-head layouts that returns the caches it wrote, seeded with the transfer
    search off (the KB's cache write takes these layouts too): inductor's code writes the inputs and returns
    nothing; the seed returns those inputs as the reference does, correct and real on every shape."""
    result = started_correct_and_real(UNSEEN / "split_layout_cache_write", tmp_path / "sessions",
                                       "starting point: compiler seed", "compiler seed (inductor)",
                                       "--transfer-budget", "0")
    kernel = (next((tmp_path / "sessions").iterdir()) / "iterations" / "0001" / "kernel.py").read_text()
    assert "_ALIASES = ('key_cache', 'value_cache')" in kernel
    assert all(name.startswith("_seed_kernel") for s in result["shapes"] for name in s["audit"]["own_kernels"])


@pytest.mark.slow
def test_optimize_seeds_a_problem_with_boolean_and_byte_tensors(tmp_path: Path) -> None:
    """Masks in and out (`bool`, `uint8` in the published metadata): the problem loads, the seed's kernel reads
    and writes them, and the boolean output is held to the reference exactly. The reference also holds a buffer
    its forward never reads: the seed's Model loads it with the state dict all the same."""
    started_correct_and_real(UNSEEN / "seen_token_penalty", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)")


@pytest.mark.slow
def test_optimize_seeds_a_reference_that_holds_its_parameters(tmp_path: Path) -> None:
    """A parameter and a submodule's buffer, drawn at random: the seed's programs read them under their
    state-dict names, kept from the state dict the evaluator loads into the candidate. The GPU compile check
    builds the candidate as the evaluator does (the state dict loaded), so the start compiles and is accepted."""
    started_correct_and_real(UNSEEN / "held_scale_norm", tmp_path / "sessions", "starting point: compiler seed",
                             "compiler seed (inductor)", "--compile-for", "sm_90")
    session = next((tmp_path / "sessions").iterdir())
    assert '"accepted": true' in (session / "events.jsonl").read_text()
    kernel = (session / "iterations" / "0001" / "kernel.py").read_text()
    assert "inputs['self.scale']" in kernel and "inputs['self.shift.offset']" in kernel
