"""Write the agent's starting point for a problem as a candidate file, optionally with tunables changed.

The same search `aka optimize` starts with (a KB kernel declared for the problem, a transfer, or a compiler seed),
on the CPU's probe shapes; `--set KEY=VALUE` rewrites one entry of the candidate's TUNABLES (e.g. to time a path
that is off by default). For device sessions: the candidate is made here, carried as an ignored file, and timed
there with `aka bench run --candidates DIR`.

    PYTHONPATH=. python3 scripts/transfer_candidate.py PROBLEM_DIR OUT_DIR [--set GLUON=1]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any kernel module is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def set_tunable(source: str, key: str, value: str) -> str:
    """`source` with TUNABLES' `"key": <int>` entry set to `value`; SystemExit when there is no such entry."""
    pattern = re.compile(rf'("{re.escape(key)}"\s*:\s*)(-?\d+)')
    block = re.search(r"^TUNABLES\s*=\s*\{.*?\}", source, re.S | re.M)
    if block is None or not pattern.search(block.group(0)):
        raise SystemExit(f"the candidate's TUNABLES has no integer entry {key!r}")
    start, end = block.span()
    return source[:start] + pattern.sub(rf"\g<1>{int(value)}", block.group(0), count=1) + source[end:]


def main() -> int:
    from aka_tui.agent.starting_point import find_starting_point
    from aka_tui.bench.problem.lookup import load_problem

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("out_dir", type=Path, help="the file is written as OUT_DIR/<problem name>.py")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    start = find_starting_point(problem, "cpu", "smoke", log=lambda line: print(line, file=sys.stderr))
    source = start.kernel.source
    for item in args.set:
        key, _, value = item.partition("=")
        source = set_tunable(source, key, value)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"{problem.name}.py"
    out.write_text(source)
    print(f"{out}: {start.detail}" + "".join(f", {item}" for item in args.set))
    return 0


if __name__ == "__main__":
    sys.exit(main())
