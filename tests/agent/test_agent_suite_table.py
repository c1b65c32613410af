"""scripts/agent_suite_table.py: the table joins each session's path (the sessions' fixed-width table) with the
scoring run's verdicts and the report's speed-ups, heaviest operator first, and names a failing one's first
failure without its replay command."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SESSIONS_TABLE = """2 operators of /x: the newest session of each under /s, scored with the suite's weights
op           w%    path                               kernel  min own_share  S_op eager (S_raw)  S_op after  iters
-----------------------------------------------------------------------------------------------------------------
light_op     30.0  compiler seed (inductor)           real    1.00           0 (-)               0.100       1/1
heavy_op     70.0  transfer from some-reference-kernel  real    0.90           0 (-)               0.500       1/1
S_agg = 0.38 (normalised)
"""


def _shape(shape_id: str, status: str, share: float | None = 1.0, message: str = "",
           real: bool = True) -> dict[str, Any]:
    return {"shape_id": shape_id, "status": status,
            "audit": None if share is None else {"real": real, "own_share": share},
            "error": {"message": message} if message else None}


RUN = {
    "ops": [{"problem": "light_op", "weight": 0.3, "s_op": 0.05, "real": False},
            {"problem": "heavy_op", "weight": 0.7, "s_op": 0.5, "real": True},
            {"problem": "library_op", "weight": 0.1, "s_op": 0.0, "real": False}],
    "results": [{"problem": "light_op", "shapes": [_shape("0", "passed", 0.8),
                                                   _shape("1", "wrong_output", None, "seed 7: out: 2 NaN; replay: aka eval x")]},
                {"problem": "heavy_op", "shapes": [_shape("0", "passed", 0.9), _shape("1", "passed", 0.95)]},
                {"problem": "library_op", "shapes": [_shape("0", "passed", 0.2, real=False)]}],
    "aggregate": {"s_agg": 0.365},
}
PAPER = [{"role": "candidates", "rows": [{"op": "heavy_op", "vs_eager": 12.5, "vs_compile": 1.04},
                                         {"op": "light_op", "vs_eager": None, "vs_compile": None}]},
         {"role": "eager", "rows": [{"op": "heavy_op", "s_raw_op": 0.0123}, {"op": "light_op", "s_raw_op": 0.2}]}]


def test_rows_join_paths_verdicts_and_speedups() -> None:
    text = runpy.run_path(str(ROOT / "scripts/agent_suite_table.py"))["build"](SESSIONS_TABLE, RUN, PAPER)
    rows = [line.split(" | ") for line in text.splitlines()[2:] if line.startswith("| ")]
    assert [row[0] for row in rows] == ["| heavy_op", "| light_op", "| library_op"]
    assert rows[0][1:9] == ["70.0", "transfer from some-reference-kernel", "real (0.90)", "2/2", "0 (0.012)",
                            "0.500", "12.50", "1.04"]
    assert rows[1][2:5] == ["compiler seed (inductor)", "fails 1 of 2 shapes (passed: 0.80)", "1/2"]
    assert rows[2][3:5] == ["fallback (0.20)", "1/1"]
    assert rows[1][9].startswith("shape 1 wrong_output: seed 7: out: 2 NaN") and "replay" not in rows[1][9]
    assert text.splitlines()[-1] == "S_agg 0.3650 (normalised weights), correct and real 1 of 3"
