"""Compare `aka bench` reports run without (`none`) and with (`bwrap`) the sandbox: wall time, S_agg, per-shape
candidate times. Usage: python3 scripts/sandbox_cost.py REPORT.json [REPORT.json ...] (every run's wall is
listed; the detailed comparison uses the last report of each mode)."""

from __future__ import annotations

import json
import statistics
import sys


def main(paths: list[str]) -> int:
    last: dict[str, dict] = {}
    walls_by_mode: dict[str, list[float]] = {}
    for path in paths:
        report = json.loads(open(path).read())
        modes = {r["provenance"].get("sandbox", "none") for r in report["results"]}
        if len(modes) == 1:
            mode = modes.pop()
            last[mode] = {"path": path, **report}
            walls_by_mode.setdefault(mode, []).append(report["wall_s"])
    for mode, walls in sorted(walls_by_mode.items()):
        print(f"{mode}: {len(walls)} run(s), wall {', '.join(f'{w:.1f}' for w in walls)} s, "
              f"mean {statistics.mean(walls):.1f} s")
    if set(last) != {"none", "bwrap"}:
        print(f"need one report of each mode; have {sorted(last)}")
        return 1
    none, bwrap = last["none"], last["bwrap"]
    print(f"wall: none {none['wall_s']:.1f} s, bwrap {bwrap['wall_s']:.1f} s: "
          f"sandbox cost {100 * (bwrap['wall_s'] / none['wall_s'] - 1):+.1f}%")
    print(f"S_agg: none {none['aggregate']['s_agg']:.4f}, bwrap {bwrap['aggregate']['s_agg']:.4f}")
    times = {}
    for label, report in (("none", none), ("bwrap", bwrap)):
        for result in report["results"]:
            for shape in result["shapes"]:
                if shape.get("timing"):
                    times.setdefault((result["problem"], shape["shape_id"]), {})[label] = shape["timing"]["median_ms"]
    ratios = [t["bwrap"] / t["none"] for t in times.values() if t.get("none") and t.get("bwrap")]
    if ratios:
        print(f"candidate time bwrap/none over {len(ratios)} shapes: median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")
    walls = {label: sum(r["provenance"].get("wall_s", 0.0) for r in report["results"])
             for label, report in (("none", none), ("bwrap", bwrap))}
    print(f"sum of per-op evaluation walls: none {walls['none']:.1f} s, bwrap {walls['bwrap']:.1f} s "
          f"({100 * (walls['bwrap'] / walls['none'] - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
