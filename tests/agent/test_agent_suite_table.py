"""scripts/agent_suite_table.py on a recorded H200 run (session 47): the table joins each session's path with
the scoring run's verdicts and the report's speed-ups, and names a failing operator's first failure."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "docs/benchmarks/2026-12-06-s47"


def _build() -> str:
    module = runpy.run_path(str(ROOT / "scripts/agent_suite_table.py"))
    return module["build"]((RUN / "h200-agent/agent-table.txt").read_text(),
                           json.loads((RUN / "published-h200-s47.json").read_text()),
                           json.loads((RUN / "paper-table.json").read_text()))


def test_rows_join_paths_verdicts_and_speedups() -> None:
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in _build().splitlines()
            if line.startswith("| ") and not line.startswith("| op ")}
    assert len(rows) == 20
    first = next(line for line in _build().splitlines() if line.startswith("| ") and "---" not in line
                 and not line.startswith("| op "))
    assert first.startswith("| unified_attention | 39.5 |")  # heaviest first
    ua = rows["unified_attention"]
    assert ua[2] == "transfer from attention-prefill-varlen-reference-kernel"
    assert ua[3:9] == ["real (1.00)", "25/25", "0 (0.005)", "0.301", "83.51", "101.92"]
    moe = rows["fp8_blockscale_fused_moe"]
    assert moe[3] == "fails 3 of 6 shapes (passed: 1.00)" and moe[4] == "3/6"
    assert "NaN/Inf" in moe[9] and "replay" not in moe[9]
    assert "correct and real 19 of 20" in _build().splitlines()[-1]
