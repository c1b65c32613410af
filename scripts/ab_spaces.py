"""Print `aka kb sweep` flags that pin every tunable of OP's KB kernel to its default except the given ones.

A grid sweep over those flags is an A/B (or small factorial) measurement of just the named tunables:

    aka kb sweep OP --strategy grid $(python3 scripts/ab_spaces.py OP HW_CAST=0,1)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aka_tui.knowledge.reference_kernels import kernels_for_op  # noqa: E402
from aka_tui.knowledge.store import default_kb_dir, load_kb  # noqa: E402


def flags(op: str, varied: dict[str, str]) -> list[str]:
    kernels = kernels_for_op(load_kb(default_kb_dir()), op)
    if not kernels:
        raise SystemExit(f"no KB reference kernel for {op}")
    defaults = kernels[0].tunables
    unknown = sorted(set(varied) - set(defaults))
    if unknown:
        raise SystemExit(f"{op}: no tunable(s) {', '.join(unknown)}; it has {', '.join(defaults)}")
    out = []
    for name, value in defaults.items():
        out += ["--space", f"{name}={varied.get(name, value)}"]
    return out


if __name__ == "__main__":
    op, *pairs = sys.argv[1:]
    print(" ".join(flags(op, dict(p.split("=", 1) for p in pairs))))
