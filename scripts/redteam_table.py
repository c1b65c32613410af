"""The red-team corpus and the honest kernels on this machine's device, each against its expected verdict.

Prints one Markdown row per case (expected verdict, the statuses and holds it got, S_op, whether it is as expected)
and writes the rows as JSON; exits 1 when a case is not as expected. The same evaluation and check as
`tests/redteam/test_redteam.py` (full tier on a GPU unless a case names its tier; smoke on the CPU).

    PYTHONPATH=. python3 scripts/redteam_table.py [--device cuda] [--only NAME,NAME] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tests.redteam.test_redteam import CHEATS, HONEST, _check, _evaluate, expected_verdict


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", help="comma-separated case names (file stems)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    wanted = set(args.only.split(",")) if args.only else None
    rows, failed = [], 0
    print("| corpus | case | expected | statuses | holds | S_op | as expected | s |\n|---|---|---|---|---|---|---|---|")
    for path in CHEATS + HONEST:
        if wanted and path.stem not in wanted:
            continue
        verdict, gpu_only = expected_verdict(path)
        if gpu_only and args.device == "cpu":
            continue
        started = time.time()
        result = op = None
        try:
            result, op = _evaluate(path, args.device)
            _check(path, (result, op))
            outcome = "yes"
        except AssertionError as exc:
            outcome = f"NO: {str(exc)[:160]}"
        except Exception as exc:  # the evaluation itself failed
            outcome = f"NO: {type(exc).__name__}: {str(exc)[:160]}"
        failed += not outcome.startswith("yes")
        statuses = sorted({s.status for s in result.shapes}) if result else []
        row = {"corpus": "cheat" if path in CHEATS else "honest", "case": path.stem, "expected": verdict,
               "gpu_only": gpu_only, "statuses": statuses, "holds": op.holds if op else [],
               "s_op": op.s_op if op else None, "as_expected": outcome, "seconds": round(time.time() - started, 1)}
        rows.append(row)
        print(f"| {row['corpus']} | {path.stem} | {'gpu-only ' if gpu_only else ''}{verdict.replace('|', ' or ')} | {', '.join(statuses)} | "
              f"{', '.join(row['holds'])} | {row['s_op'] if row['s_op'] is None else round(row['s_op'], 4)} | "
              f"{outcome} | {row['seconds']} |", flush=True)
    print(f"{len(rows) - failed} of {len(rows)} cases as expected")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
