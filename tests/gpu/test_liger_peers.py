"""On a CUDA GPU: every Liger-Kernel peer of `aka bench libraries` (rms_norm, fused_add_rms_norm, layer_norm,
silu_and_mul, rope) checked against the problem's reference and timed beside our kernel at the largest full
shape, device time and end to end. Needs liger-kernel (`pip install liger-kernel==0.8.5`)."""

from __future__ import annotations

import pytest

from aka_tui.bench.compare.library import results, run
from aka_tui.bench.problem.lookup import load_suite
from tests.conftest import PROBLEMS, REPO

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("op", results.PEER_OPS)
def test_liger_peer_agrees_and_is_timed_on_the_gpu(op: str) -> None:
    pytest.importorskip("liger_kernel")
    lines: list[str] = []
    report = run.run_library_compare(load_suite(PROBLEMS), "cuda", "full", ops=[op], shape_sets=("largest",),
                                     candidates_dir=REPO / "kb" / "family", rounds=2, log=lines.append)
    assert not report.errors and report.peers["Liger-Kernel"]["available"], (report.errors, lines)
    assert report.versions["liger_kernel"] != "missing"
    comp, = report.comparisons
    assert comp.ours.ok and comp.target is None, comp.ours.check
    peer, = comp.library
    assert peer.role == "peer" and peer.ok and peer.status == "passed", (peer.check, lines)
    # The first formulation computes the problem's own semantics: it must agree, not only a faster variant.
    assert peer.details["alternatives"][0]["check"] == "ok", peer.details["alternatives"]
    assert peer.median_ms and peer.e2e_ms and peer.e2e_ms >= min(peer.round_ms) > 0
    assert all(r["host_call_ms"] is not None and r["saturated"] is not None for r in peer.rounds)
    row, = comp.rows()
    assert row["ratio"] and row["e2e_ratio"] and row["met"] is None
