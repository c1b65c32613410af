"""`aka trace …` commands: record, import, apply. Heavy imports stay inside the handlers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def _print_import_summary(doc: dict[str, Any], top: int = 25) -> None:
    prov = doc["provenance"]
    print(f"{Path(prov['trace']).name}: time source {prov['time_source']}, basis {prov.get('basis', 'observed')}"
          + (f" ({prov['roofline_profile']} T_SOL)" if prov.get("roofline_profile") else "") + ", "
          f"{prov['total_time_us'] / 1e3:.3f} ms attributed, "
          f"{prov['events'].get('kernel', 0)} kernels, {prov['events'].get('aka_annotations', 0)} aka annotations")
    rows = [(op, o["importance"], len(o["shapes"]), len(o["dropped_shapes"]), o["covered_share"], "/".join(o["mapped_by"]))
            for op, o in doc["ops"].items()]
    width = max([len(r[0]) for r in rows] + [2])
    print(f"{'op'.ljust(width)}  share %   shapes  dropped  covered  mapped by")
    for op, imp, kept, dropped, cov, how in rows[:top]:
        print(f"{op.ljust(width)}  {imp:7.3f}  {kept:6d}  {dropped:7d}  {cov:7.1%}  {how}")
    if len(rows) > top:
        print(f"… {len(rows) - top} more ops (see the Markdown summary)")
    print(f"unknown kernels (no rule matched): {doc['unknown_share']:.2%} of the time"
          + (f", largest: {doc['unknown'][0]['name'][:80]} ({doc['unknown'][0]['share']:.2%})" if doc["unknown"] else ""))
    if prov["time_source"] == "cpu":
        print("note: CPU time of annotated ranges (a CPU trace has no GPU kernels); not GPU-time shares")


def cmd_import(args: argparse.Namespace) -> int:
    from aka_tui.trace.rules import load_rules
    from aka_tui.trace.weights import ImportOptions, import_trace, write_weights

    rules = load_rules([Path(p) for p in args.map or []], defaults=not args.no_default_rules)
    doc = import_trace(args.trace, rules, ImportOptions(
        args.coverage, args.max_shapes, args.time_source, args.basis,
        Path(args.suite) if args.suite else None, args.hardware, args.launch_floor_us))
    json_path, md_path = write_weights(doc, Path(args.out))
    _print_import_summary(doc)
    print(f"wrote {json_path} and {md_path}")
    if args.apply:
        return _apply(json_path, args)
    return 0


def _apply(weights: Path, args: argparse.Namespace) -> int:
    from aka_tui.bench.problem.lookup import default_suite_dir
    from aka_tui.trace.apply import apply_weights, render_apply
    from aka_tui.trace.weights import read_weights

    suite = Path(args.suite) if args.suite else default_suite_dir()
    report = apply_weights(read_weights(weights), suite, dry_run=args.dry_run, allow_cpu=args.allow_cpu)
    print(render_apply(report))
    if args.dry_run:
        print("dry run: nothing written")
    else:
        print(f"rewrote {len(report.written)} files in {suite}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    return _apply(Path(args.weights), args)


def cmd_record(args: argparse.Namespace) -> int:
    from aka_tui.trace.record import DEFAULT_WORKLOAD, RecordOptions, record

    options = RecordOptions(out=Path(args.out), device=args.device, steps=args.steps, smoke=args.smoke,
                            suite_dir=Path(args.suite) if args.suite else None,
                            workload=Path(args.workload) if args.workload else DEFAULT_WORKLOAD,
                            warmup_steps=args.warmup, budget_s=args.budget_s, seed=args.seed)
    meta = record(options, log=lambda m: print(m, file=sys.stderr))
    for key, why in meta["failures"].items():
        print(f"warning: skipped {key}: {why}", file=sys.stderr)
    print(f"wrote {args.out} ({meta['steps']} steps: {meta['prefill_steps']} prefill, {meta['decode_steps']} decode; "
          f"{meta['tier']} shapes on {meta['device_name']}); next: aka trace import {args.out}")
    return 0


def _add_apply_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", help="suite directory to rewrite (default: the shipped problems/)")
    p.add_argument("--dry-run", action="store_true", help="show the before/after table, write nothing")
    p.add_argument("--allow-cpu", action="store_true",
                   help="apply weights whose time source is CPU time (a CPU-recorded trace; tests and demos)")


def register(sub: Any) -> None:
    """Add `aka trace record|import|apply` to the CLI's subparsers."""
    p = sub.add_parser("trace", help="profiler traces → op importance and shape weights",
                       description="Record a serving-style workload under torch.profiler, import a PyTorch "
                                   "profiler (Kineto/Chrome) trace into per-op GPU-time shares and per-shape "
                                   "weights, and apply them to the suite. See docs/trace.md.")
    tr = p.add_subparsers(dest="trace_command", metavar="ACTION", required=True)

    r = tr.add_parser("record", help="profile the suite's references in a prefill/decode step mix",
                      description="Run the serving-style workload (docs/trace.md) built from the suite's "
                                  "reference modules under torch.profiler (record_shapes=True), each call wrapped "
                                  "in record_function('aka:<op>:<shape_id>'), and export a Chrome trace "
                                  "(gzipped when the name ends in .gz) with the workload mix in its metadata.")
    r.add_argument("--out", default="trace.json.gz", help="trace file to write (default trace.json.gz)")
    r.add_argument("--device", default="cpu", help="cpu (smoke shapes, CPU time) or cuda[:N] (full shapes, GPU time)")
    r.add_argument("--steps", type=int, default=8, help="profiled engine steps (default 8: 2 prefill, 6 decode)")
    r.add_argument("--smoke", action="store_true", help="smoke-tier shapes even on a GPU (implied on the CPU)")
    r.add_argument("--warmup", type=int, default=1, help="unprofiled warm-up rounds, each one prefill and one decode step (default 1)")
    r.add_argument("--budget-s", type=float,
                   help="stop adding profiled steps once this many seconds have passed since warm-up began")
    r.add_argument("--suite", help="suite directory (default: the shipped problems/)")
    r.add_argument("--workload", help="workload mix JSON (default: the shipped aka-serving-mix-v1)")
    r.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    r.set_defaults(func=cmd_record)

    i = tr.add_parser("import", help="trace → per-op importance and per-shape weights (JSON + Markdown)",
                      description="Link the GPU kernels of a torch.profiler Chrome/Kineto trace (plain or gzipped) "
                                  "to the CPU ops and aka:<op>:<shape> annotations that launched them, map the "
                                  "rest by kernel-name rules, and write trace_weights.json and trace_weights.md: "
                                  "importance = GPU-time share per op, and per op the shapes covering --coverage of "
                                  "its time. Unknown kernels are listed with their share.")
    i.add_argument("trace", help="trace file (.json or .json.gz) from torch.profiler export_chrome_trace")
    i.add_argument("--map", action="append", metavar="RULES",
                   help="kernel-name rules file (.json or .toml), tried before the shipped rules (repeatable)")
    i.add_argument("--no-default-rules", action="store_true", help="use only the --map rules")
    i.add_argument("--out", default="reports/trace", help="output directory (default reports/trace)")
    i.add_argument("--coverage", type=float, default=0.9,
                   help="per op, keep the largest shapes until they cover this share of its time (default 0.9)")
    i.add_argument("--max-shapes", type=int, help="per op, keep at most this many shapes")
    i.add_argument("--time-source", choices=["auto", "gpu", "cpu"], default="auto",
                   help="gpu: kernel time; cpu: CPU time of aka: annotated ranges; auto: gpu when the trace has kernels")
    i.add_argument("--basis", choices=["observed", "roofline"], default="observed",
                   help="observed: measured time (an engine's trace); roofline: annotated calls × T_SOL of their "
                        "shape (a trace of the suite's own references, whose naive ops would otherwise dominate)")
    i.add_argument("--hardware", help="with --basis roofline: profile for T_SOL (default: the trace's GPU)")
    i.add_argument("--launch-floor-us", type=float,
                   help="with --basis roofline: minimum time per call, one kernel launch (default: the profile's "
                        "measured empty-launch time, else 0)")
    i.add_argument("--apply", action="store_true", help="then apply the weights to the suite (as `aka trace apply`)")
    _add_apply_flags(i)
    i.set_defaults(func=cmd_import)

    a = tr.add_parser("apply", help="rewrite the suite's op importances and shape weights from a weights file",
                      description="Rewrite problem.json `importance` (with provenance) and shapes.json per-shape "
                                  "`weight` (with `weight_provenance`) from a trace_weights.json, and print a "
                                  "before/after table. Shapes of the trace that match no shape id are reported; "
                                  "suite shapes of the same tier absent from the kept set get weight 0.")
    a.add_argument("weights", help="trace_weights.json written by `aka trace import`")
    _add_apply_flags(a)
    a.set_defaults(func=cmd_apply)
