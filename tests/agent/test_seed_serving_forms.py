"""More serving-stack computations nobody prepared, each seeded and checked on the CPU interpreter in this
process (made-up problems in the published format, no roofline file): the seed's start exists and reproduces the
reference on its smallest probe."""

from __future__ import annotations

import pytest

from tests.agent.optimize_runs import seeded_on_the_cpu


def test_a_packed_int4_weight_gemm_unpacks_by_shifts_into_the_seeds_gemm() -> None:
    """Eight 4-bit codes an int32, a zero point and a scale per group of K: the unpacking is inductor's own
    kernel, the product the seed's GEMM."""
    assert "the seed's own GEMM for mm" in seeded_on_the_cpu("int4_group_dequant_gemm")


@pytest.mark.parametrize("name", ["gathered_adapter_delta", "merged_partial_attention", "fp4_block_codes",
                                  "selective_state_step"])
def test_gathers_merges_and_packed_codes_are_seeded(name: str) -> None:
    """Per-token adapters picked by index; two partial attention results merged by their log-sum-exps; e2m1
    codes by bucketize with an fp8 scale per block of 16, two codes packed a byte; a state-space decode step
    that updates its state in place."""
    assert "compiler seed" in seeded_on_the_cpu(name)


def test_a_routing_with_unsorted_top_k_calls_is_seeded_in_the_sorted_order() -> None:
    """Grouped top-k routing whose top-k calls leave their order open: the reference is compared in the sorted
    order (`settled_order.py`), which the seed's own selection rounds give."""
    assert "compiler seed" in seeded_on_the_cpu("grouped_biased_routing")


def test_rows_gathered_through_block_tables_to_lengths_read_on_the_host_are_seeded() -> None:
    """A loop over sequences, each gathering its cache blocks through its block table and keeping its length
    (`.item()`) of rows: the slice of that gather at a bound read from the data is taken from a copy inductor can
    slice (`seed_data_dependent.slice_by_positions`; inductor's own slice of it fails to lower)."""
    assert "compiler seed" in seeded_on_the_cpu("block_table_gather")
