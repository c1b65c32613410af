"""Values read to the host in the audited call: each route counts, and reading about as much as the output holds
is charged as computing (`audit.build_report`)."""

from __future__ import annotations

from collections import Counter

import torch

from aka_tui.bench.measure.audit import AtenAuditMode, build_report

CHARGE = "values read to the host::item/tolist"


def test_a_storages_items_count_as_values_read_to_the_host() -> None:
    """`bytes(x.untyped_storage())` indexes the storage item by item, each through aten's `_local_scalar_dense`
    (what `item()` runs): arithmetic in Python on those bytes is charged like arithmetic on `tolist()`."""
    x = torch.randn(64)
    with AtenAuditMode() as audit:
        raw = bytes(x.untyped_storage())
    assert len(raw) == 256 and audit.readback == 256
    assert build_report(audit, Counter(), "candidate", output_size=64).compute_ops[CHARGE] == 256


def test_a_few_host_values_are_not_charged() -> None:
    """Sequence lengths and counts an honest launcher reads stay below a quarter of the output (floor 64)."""
    lengths = torch.tensor([3, 5, 9])
    with AtenAuditMode() as audit:
        total = sum(lengths.tolist()) + int(lengths[0].item())
    assert total == 20 and audit.readback == 1  # `tolist()` is counted by the worker's wrapper, not the mode
    assert CHARGE not in build_report(audit, Counter(), "candidate", output_size=4096).compute_ops
