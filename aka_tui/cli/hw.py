"""`aka hw list|detect|calibrate`: the hardware profiles the roofline is computed on."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("hw", help="hardware profiles: list, detect, calibrate",
                       description="Hardware profiles (datasheet peaks per execution path).")
    hw = p.add_subparsers(dest="hw_command", metavar="ACTION", required=True)
    hw.add_parser("list", help="list datasheet and measured profiles",
                  description="List the shipped datasheet profiles and the measured ones saved by `aka hw calibrate` "
                              "(in $AKA_HOME/hardware), with their bf16/fp8/fp32 peaks, HBM bandwidth and L2 size.")
    d = hw.add_parser("detect", help="show the profile of the current device",
                      description="Show which hardware profile the current device maps to (by the driver's device "
                                  "name and the profiles' aliases); `cpu` without a GPU.")
    d.add_argument("--device", default="auto")
    c = hw.add_parser("calibrate", help="measure copy bandwidth, matmul rates, launch time; save a profile",
                      description="Measure device copy bandwidth, bf16/fp8/fp32 matmul rates and the empty-launch "
                                  "time on this GPU and save a '<sku>-measured' profile.")
    c.add_argument("--device", default="cuda")
    c.add_argument("--json", help="also write the measured profile here")
    p.set_defaults(func=cmd_hw)


def cmd_hw(args: argparse.Namespace) -> int:
    from aka_tui.bench.roofline.hardware import all_profiles, detect_profile
    from aka_tui.bench.scoring.report import text_table

    if args.hw_command == "list":
        rows = [[p.name, p.display_name, f"{p.peaks_tflops.get('bf16_tc', 0):.0f}",
                 f"{p.peaks_tflops.get('fp8_tc', 0):.0f}", f"{p.peaks_tflops.get('fp32', 0):.1f}",
                 f"{p.hbm_bandwidth_tbps:.2f}", f"{p.l2_bytes >> 20}", "measured" if p.measured else "datasheet"]
                for p in all_profiles().values()]
        print(text_table(rows, ["name", "device", "bf16 TF", "fp8 TF", "fp32 TF", "HBM TB/s", "L2 MiB", "source"]))
        return 0
    if args.hw_command == "detect":
        profile = detect_profile(args.device)
        print(f"{profile.name}: {profile.display_name} ({profile.source})")
        return 0
    return _calibrate(args)


def _calibrate(args: argparse.Namespace) -> int:
    """Measure this GPU, save it as a '<sku>-measured' profile, print it against the datasheet."""
    from aka_tui.bench.roofline.calibrate import calibrate
    from aka_tui.bench.roofline.hardware import save_measured

    profile = calibrate(args.device)
    path = save_measured(profile)
    m = profile.measurements
    print(f"{m['device_name']}: copy {m['copy_tbps']:.2f} TB/s; matmul " +
          ", ".join(f"{k} {v:.1f} TFLOP/s" for k, v in m["matmul_tflops"].items()) +
          f"; empty launch {m['empty_launch_us']:.2f} us")
    print("ratio to datasheet: " + ", ".join(f"{k} {v:.0%}" for k, v in m["datasheet_ratio"].items()) +
          f", copy {m['copy_tbps'] / m['datasheet_hbm_tbps']:.0%} of HBM")
    print(f"saved {path} (use --hardware {profile.name} or --measured)")
    if args.json:
        Path(args.json).write_text(json.dumps(profile.to_json(), indent=2) + "\n")
    return 0
