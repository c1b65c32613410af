"""The measurement engine: one per-shape path — inputs → reference → candidate → compare → time → attribute —
used by the evaluator's worker, `aka kb sweep`, the library comparison and the scripts that measure. A typed job
(`job.MeasureJob`) goes in; a `ShapeResult` with one vocabulary of verdicts (`verdicts`) comes out. Every call of
the candidate goes through one loop (`calls.run_calls`) driven by a plan (`plan.ShapePlan`): checked, audited,
profiled and timed calls look the same from inside `forward`, and the timed calls' outputs, launches and device
time are held to the checked ones. Across the process boundary, the worker's messages are authenticated
(`channel`) and the parent checks the reported outputs against its own reference (`parent_check`); what a person
must accept before it scores (`suspicious` sources, S_raw > 1) is recorded by `acceptance`.
"""

from __future__ import annotations

from aka_tui.bench.measure.job import CandidateRef, MeasureJob
from aka_tui.bench.measure.verdicts import HOLDS, OVER_ROOFLINE, PASSED, STATUSES, SUSPICIOUS, VERDICTS

__all__ = ["CandidateRef", "HOLDS", "MeasureJob", "OVER_ROOFLINE", "PASSED", "STATUSES", "SUSPICIOUS", "VERDICTS"]
