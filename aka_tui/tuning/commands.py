"""`aka kb sweep OP [OP...]`: time a KB reference kernel's tunables at the shapes that matter, on this device."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from aka_tui.bench.measure.job import DEFAULT_CPU_REPS, DEFAULT_INPUT_SETS
from aka_tui.tuning import DEFAULT_MAX_CONFIGS, STRATEGIES, SweepError, describe_changes, fmt_us


def _progress(event: dict[str, Any]) -> None:
    """One stderr line per configuration run (replayed ones, from a restarted child, are not repeated)."""
    if event.get("event") != "trial" or event.get("replayed"):
        return
    t = event["trial"]
    if t["status"] in ("passed", "ok", "duplicate"):
        figures = f"{fmt_us(t['median_ms'])} us"
        if t.get("tbps") is not None:
            figures += f"  {t['tbps']:.3g} TB/s ({t['bw_pct']:.0f}% BW)"
        if t.get("tflops") is not None and event.get("bound") == "compute":
            figures += f"  {t['tflops']:.4g} TFLOP/s"
        if t.get("sol_ratio") is not None:
            figures += f"  T_SOL/T {t['sol_ratio']:.3f}"
        if t["status"] == "duplicate":
            figures += f"  (same launches as #{t['duplicate_of']})"
    else:
        figures = f"{t['status']}: {(t.get('error') or '')[:140]}"
    print(f"  {event.get('op', '')} {t['shape_id']} #{t['index']} [{t['phase']}] {describe_changes(t['changed'])}: "
          f"{figures}", file=sys.stderr, flush=True)


def _command(args: argparse.Namespace, device: str, tier: str) -> str:
    """The command line that repeats this sweep (options spelled out)."""
    parts = ["aka", "kb", "sweep", *args.ops, "--shapes", args.shapes, "--strategy", args.strategy,
             "--max-configs", str(args.max_configs), "--device", device, "--tier", tier, "--seed", str(args.seed)]
    for item in args.space or []:
        parts += ["--space", item]
    if args.kernel:
        parts += ["--kernel", args.kernel]
    if args.suite:
        parts += ["--suite", args.suite]
    return " ".join(shlex.quote(p) for p in parts)


def _sandbox(in_process: bool) -> str:
    """How the swept kernels run: in the evaluator's sandbox, or (--in-process) inside this very process."""
    from aka_tui.bench.sandbox.bwrap import resolve_mode, warn_unsandboxed

    if in_process:
        warn_unsandboxed("--in-process runs the kernels inside aka itself")
        return "none (--in-process)"
    mechanism, note = resolve_mode()
    return mechanism if mechanism == "bwrap" else f"none ({note})"


def cmd_sweep(args: argparse.Namespace) -> int:
    from aka_tui.bench.evaluator.evaluate import device_name, library_versions, resolve_device
    from aka_tui.bench.problem.interpreted_library import library_interpreted
    from aka_tui.bench.problem.lookup import default_suite_dir, find_problem
    from aka_tui.bench.roofline.hardware import detect_profile, get_profile
    from aka_tui.knowledge.store import default_kb_dir, load_kb
    from aka_tui.tuning.isolation import run_isolated
    from aka_tui.tuning.report import build_report, default_name, render_text, write_report
    from aka_tui.tuning.runner import kernel_file, make_job, parse_space, resolve_kernel, sweep_job
    from aka_tui.tuning.sweep import SweepOptions, select_shapes

    if args.max_configs < 1:
        raise SweepError(f"--max-configs must be a positive integer, not {args.max_configs}")
    if args.budget_s is not None and args.budget_s <= 0:
        raise SweepError(f"--budget-s must be positive, not {args.budget_s}")
    device = resolve_device(args.device)
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module is imported (in-process runs)
    suite_dir = Path(args.suite) if args.suite else default_suite_dir()
    kb = load_kb(Path(args.kb) if args.kb else default_kb_dir())
    profile = get_profile(args.hardware) if args.hardware else detect_profile(device, prefer_measured=args.measured)
    tier = args.tier or ("full" if device.startswith("cuda") else "smoke")
    plans = []
    if args.kernel and len(set(args.ops)) != 1:
        raise SweepError("--kernel FILE sweeps one operator's candidate: give exactly one OP")
    for op in dict.fromkeys(args.ops):  # every op is checked before anything runs
        problem = find_problem(op, suite_dir)
        kernel = kernel_file(Path(args.kernel)) if args.kernel else resolve_kernel(problem, kb)
        shapes = select_shapes(problem, args.shapes, tier, profile)
        plans.append((problem, kernel, shapes, parse_space(args.space, kernel)))
    started = time.time()
    deadline = started + args.budget_s if args.budget_s else None
    meta = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "command": _command(args, device, tier),
            "device": device, "device_name": device_name(device), "tier": tier, "strategy": args.strategy,
            "max_configs": args.max_configs, "seed": args.seed, "shapes_spec": args.shapes, "versions": library_versions(),
            "isolated": not args.in_process, "sandbox": _sandbox(args.in_process),
            "hardware_profile": {k: v for k, v in profile.to_json().items() if k not in ("measurements", "aliases")}}
    name = args.name or default_name([p.name for p, *_ in plans], tier)
    print(f"sweeping {len(plans)} op(s) on {meta['device_name']} ({profile.name}), tier {tier}, {args.strategy}, "
          f"at most {args.max_configs} configurations per shape" +
          (f", {args.budget_s:.0f} s budget" if deadline else ""), file=sys.stderr, flush=True)
    records: list[dict[str, Any]] = []
    for i, (problem, kernel, shapes, space) in enumerate(plans):
        op_deadline = None
        if deadline is not None:  # each op gets its share of what is left; time an op leaves goes to the next
            op_deadline = time.time() + max(0.0, deadline - time.time()) / (len(plans) - i)
        options = SweepOptions(args.strategy, args.max_configs, args.seed, args.input_sets, args.cpu_reps,
                               op_deadline, space or None)
        job = make_job(problem, kernel, kb.root, shapes, device, profile.name, options)
        print(f"{problem.name}: {kernel.path.name}, shapes {', '.join(s.shape_id for s in shapes)}",
              file=sys.stderr, flush=True)
        if args.in_process:
            # on the CPU this process's Triton may have been imported before TRITON_INTERPRET was set above
            with library_interpreted() if device == "cpu" else contextlib.nullcontext():
                record = sweep_job(job, _progress)
        else:
            record = run_isolated(job, args.config_timeout, _progress)
        records.append(record)
        if args.out:  # a checkpoint after every op: a killed sweep keeps the ops it finished
            write_report(build_report(records, meta), args.out, name)
    report = build_report(records, meta)
    report["wall_s"] = round(time.time() - started, 1)
    print(render_text(report))
    if args.out:
        json_path, md_path = write_report(report, args.out, name)
        print(f"wrote {json_path} and {md_path}")
    return 1 if any(r.get("error") for r in records) else 0


def register(actions: Any) -> None:
    """Add `sweep` to the `aka kb` actions."""
    s = actions.add_parser(
        "sweep", help="time a KB reference kernel's tunables at chosen shapes (a tuning aid, not a score)",
        description="Time the knowledge base's reference kernel of each OP over its TUNABLES (coordinate search "
                    "or a grid) at the chosen shapes: one correctness check per configuration, then the "
                    "evaluator's timer; best configuration per shape with TB/s, % of the profile's bandwidth, "
                    "TFLOP/s and T_SOL/T next to the default's. No hardening, no attribution: not a score.")
    s.add_argument("ops", nargs="+", metavar="OP", help="suite problem(s) with a KB reference kernel")
    s.add_argument("--kernel", metavar="FILE",
                   help="sweep this candidate file's TUNABLES / SEARCH_SPACE instead of the KB's kernel (one OP; "
                        "e.g. a session's kernel from `aka export`, which for an operator nobody prepared is an "
                        "adapter around a transferred KB kernel)")
    s.add_argument("--shapes", default="weighted",
                   help="comma-separated: weighted (shapes carrying score weight), largest (longest T_SOL), all, "
                        "and/or shape ids (default weighted)")
    s.add_argument("--strategy", choices=STRATEGIES, default="coordinate",
                   help="coordinate: one tunable at a time from TUNABLES; grid: the product (seeded sample)")
    s.add_argument("--max-configs", type=int, default=DEFAULT_MAX_CONFIGS,
                   help=f"configurations run per shape (default {DEFAULT_MAX_CONFIGS}; duplicates of a timed "
                        "launch are free)")
    s.add_argument("--device", default="auto", help="cpu, cuda or cuda:N (default: cuda if available)")
    s.add_argument("--tier", choices=["smoke", "full"], help="shape tier (default: smoke on CPU, full on GPU)")
    s.add_argument("--out", help="write <name>.json (every configuration, with errors) and <name>.md here")
    s.add_argument("--name", help="report file stem (default sweep-<ops>-<tier>)")
    s.add_argument("--seed", type=int, default=0, help="grid sample order (default 0)")
    s.add_argument("--space", action="append", metavar="NAME=V1,V2",
                   help="restrict a tunable to these values of its SEARCH_SPACE (repeatable)")
    s.add_argument("--budget-s", type=float, help="wall-time budget for the whole command, shared out over the ops")
    s.add_argument("--config-timeout", type=float, default=300.0,
                   help="seconds one configuration may run before its child process is killed (default 300)")
    s.add_argument("--in-process", action="store_true",
                   help="run in this process instead of one child process per op (a crash then ends the sweep)")
    s.add_argument("--input-sets", type=int, help=f"rotating timing input sets (default {DEFAULT_INPUT_SETS} on CUDA, 1 on CPU)")
    s.add_argument("--cpu-reps", type=int, default=DEFAULT_CPU_REPS,
                   help=f"timed calls per configuration on the CPU (default {DEFAULT_CPU_REPS})")
    s.add_argument("--suite", help="suite directory (default: the shipped problems/)")
    s.add_argument("--hardware", help="roofline profile name (default: detected)")
    s.add_argument("--measured", action="store_true", help="use the calibrated profile of this GPU")
    s.set_defaults(func=cmd_sweep)
