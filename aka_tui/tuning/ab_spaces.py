"""The `aka kb sweep` flags of an A/B: the named tunables of an op's KB kernel at the given values, every other
one pinned to its default (`runner.pinned_space`).

    aka kb sweep OP --strategy grid $(python -m aka_tui.tuning.ab_spaces OP HW_CAST=0,1)
"""

from __future__ import annotations

import argparse
import sys

from aka_tui.errors import run_main


def ab_flags(op: str, items: list[str]) -> list[str]:
    """`--space NAME=V1,V2` for the varied tunables (`items`, checked as `--space` is) and `--space NAME=DEFAULT`
    for the others, from the shipped knowledge base's reference kernel of `op`."""
    from aka_tui.bench.problem.lookup import find_problem
    from aka_tui.knowledge.store import default_kb_dir, load_kb
    from aka_tui.tuning.runner import parse_space, pinned_space, resolve_kernel

    kernel = resolve_kernel(find_problem(op), load_kb(default_kb_dir()))
    space = pinned_space(kernel, parse_space(items, kernel))
    return [flag for name, values in space.items()
            for flag in ("--space", f"{name}={','.join(str(v) for v in values)}")]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m aka_tui.tuning.ab_spaces",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("op")
    ap.add_argument("varied", nargs="+", metavar="NAME=V1,V2", help="a tunable and the values to compare")
    args = ap.parse_args(argv)
    print(" ".join(ab_flags(args.op, args.varied)))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
