"""`aka`: the command line. Heavy modules are imported inside the commands that need them."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from aka_tui import __version__
from aka_tui.argtypes import OneLineParser, add_sandbox_flags, fraction, int_at_least, positive_float
from aka_tui.errors import AkaError

EXIT_ERROR = 2


def _suite_dir(args: argparse.Namespace) -> Path:
    if args.suite:
        return Path(args.suite)
    from aka_tui.bench.problem.lookup import default_suite_dir

    return default_suite_dir()


def _load_suite(args: argparse.Namespace) -> Any:
    from aka_tui.bench.problem.lookup import load_suite

    suite = load_suite(_suite_dir(args))
    for name, error in suite.errors.items():
        print(f"warning: skipping problem {name}: {error}", file=sys.stderr)
    return suite


def _problem(args: argparse.Namespace, name: str) -> Any:
    from aka_tui.bench.problem.lookup import find_problem

    return find_problem(name, args.suite)


def _add_executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="where evaluations run: local (one slot per visible GPU) or a Ray cluster")
    p.add_argument("--gpus", type=int_at_least(1), help="local executor: use the first N visible GPUs (default: all)")
    p.add_argument("--cpu-workers", type=int_at_least(1), default=1,
                   help="local executor on the CPU: parallel workers")
    p.add_argument("--ray-address", default=None, help="with --executor ray: auto or HOST:PORT (default auto)")


def _executor(args: argparse.Namespace) -> Any:
    from aka_tui.executors.base import make_executor

    return make_executor(args.executor, args.device, args.gpus, args.cpu_workers, args.ray_address)


def _eval_options(args: argparse.Namespace) -> Any:
    from aka_tui.bench.evaluator.evaluate import EvalOptions
    from aka_tui.bench.evaluator.isolation import WorkerLimits

    limits = WorkerLimits(per_shape_s=args.shape_timeout, sandbox=args.sandbox)
    if args.memory_limit is not None:
        limits.memory_bytes = int(args.memory_limit * (1 << 30))
    return EvalOptions(
        device=args.device, tier=args.tier, cases=args.cases, hardware=args.hardware, measured=args.measured,
        compare_eager=getattr(args, "compare_eager", False), compare_compile=getattr(args, "compare_compile", False),
        limits=limits, own_share_threshold=args.own_share,
        verify_timed=not getattr(args, "no_timed_verification", False),
    )


def _scrub(text: str) -> str:
    from aka_tui.secrets import scrub

    return scrub(text)


def _sandbox_line(results: list[Any]) -> str:
    """How the evaluations were contained (one line; `sandbox: none` says why)."""
    from aka_tui.bench.sandbox.bwrap import SandboxReport

    seen = {json.dumps(r.provenance.get("sandbox_detail") or {}, sort_keys=True) for r in results}
    lines = []
    for item in sorted(seen):
        detail = json.loads(item)
        lines.append(SandboxReport(**detail).line() if detail else "sandbox: none (not recorded)")
    return "; ".join(lines) or "sandbox: none (nothing evaluated)"


def _accepted(result: Any, args: argparse.Namespace, per_op: bool = False) -> Any:
    """`--accept KIND[=TARGET]` recorded in the result (who, when, why, which file)."""
    from aka_tui.bench.measure.acceptance import apply_cli

    return apply_cli(result, getattr(args, "accept", None) or [], getattr(args, "accept_reason", None) or "", per_op)


class Progress:
    """A one-line progress display on stderr (a bar when stderr is a terminal, lines otherwise)."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.started = time.monotonic()

    def __call__(self, op: str, event: str, result: Any) -> None:
        if event == "shape" and result is not None:
            self.done += 0 if getattr(result, "fuzz", False) else 1  # fuzzed shapes are extra to the total
            status = result.status
            filled = int(30 * self.done / self.total)
            bar = "#" * filled + "." * (30 - filled)
            text = (f"[{bar}] {self.done}/{self.total} shapes  {time.monotonic() - self.started:6.1f}s  "
                    f"{op}:{result.shape_id} {status}")
            if self.tty:
                sys.stderr.write("\r" + text[:120].ljust(120))
            else:
                sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def cmd_problems(args: argparse.Namespace) -> int:
    from aka_tui.bench.problem.dtypes import dtype_name
    from aka_tui.bench.scoring.report import text_table

    suite = _load_suite(args)
    rows = []
    for p in sorted(suite.problems.values(), key=lambda p: (-p.importance, p.name)):
        tiers = {t: p.tier_size(t) for t in ("smoke", "full")}
        rows.append([p.name, p.family, dtype_name(p.dtype), f"{p.importance * 100:.1f}",
                     str(tiers["smoke"]), str(tiers["full"]), p.source_format])
    headers = ["op", "family", "dtype", "weight %", "smoke", "full", "format"]
    if args.markdown:
        print("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
        return 0 if not suite.errors else 1
    print(text_table(rows, headers))
    print(f"{len(rows)} problems in {suite.directory}")
    return 0 if not suite.errors else 1


def cmd_eval(args: argparse.Namespace) -> int:
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, evaluate_candidate, resolve_device, resolve_profile
    from aka_tui.bench.scoring.bench_report import launch_floor_s
    from aka_tui.bench.scoring.report import text_table
    from aka_tui.bench.scoring.score import score_op

    problem = _problem(args, args.problem)
    options = _eval_options(args)
    if args.shape:
        options.shape_ids = args.shape
    options.replay_seed = args.replay_seed
    options.fuzz = args.fuzz
    options.hardening = not args.no_hardening
    spec = CandidateSpec(args.candidate) if args.candidate in ("eager", "compile") else CandidateSpec.file(args.candidate)
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    result = evaluate_candidate(problem, spec, options,
                                on_shape=lambda r: print(f"  {r.shape_id}: {r.status}", file=sys.stderr))
    result = _accepted(result, args)
    op = score_op(problem, result, profile, launch_floor_s(profile))
    scores = {s.shape_id: s for s in op.shapes}
    rows = []
    for shape_result in result.shapes:
        s = scores.get(shape_result.shape_id)
        audit = shape_result.audit
        verdict = ("real" if audit.real else "fallback") if audit else ("fuzz" if shape_result.fuzz else "-")
        why = shape_result.error.message if shape_result.error else (audit.reason if audit and not audit.real else "")
        share = f"{audit.own_share:.2f}" if audit and audit.own_share is not None else "-"
        rows.append([shape_result.shape_id, shape_result.status, verdict, share,
                     f"{s.time_ms:.4f}" if s and s.time_ms else "-", f"{s.t_sol_ms:.4f}" if s and s.t_sol_ms else "-",
                     f"{s.s:.3f}" if s else "-", f"{s.s_raw:.3f}" if s else "-", why[:160]])
    print(f"{problem.name}: candidate {spec.label} on {device} (profile {profile.name})")
    print(text_table(rows, ["shape", "status", "kernel", "own", "T ms", "T_SOL ms", "S", "S_raw", "detail"]))
    print(f"S_op = {op.s_op:.4f}   S_raw_op = {op.s_raw_op:.4f}   correct={op.correct} real={op.real}"
          + (f"   fuzz failures: {', '.join(op.fuzz_failures)}" if op.fuzz_failures else ""))
    failures = [r for r in result.shapes if r.error and r.status != "skipped"]
    if failures:
        print("failures:")
        for r in failures:
            print(f"  {r.shape_id}: {r.status}: {r.error.message}")
    if result.static_findings:
        print("static scan (torch calls outside kernels, threads, streams; code that reads the harness):")
        for finding in result.static_findings[:20]:
            print(f"  {finding}")
    if "suspicious" in op.holds:
        print("held: suspicious (the source reads the harness, lines above): S = 0 until a person accepts it "
              "(--accept suspicious --accept-reason TEXT)")
    held = [h.split(":", 1)[1] for h in op.holds if h.startswith("over_roofline:")]
    if held:
        print("held: over_roofline (S_raw > 1, faster than the roofline allows): " + ", ".join(held) +
              "; S = 0 until a person accepts it (--accept over_roofline=SHAPE --accept-reason TEXT)")
    for item in result.acceptances:
        print(f"accepted {item['kind']}{'=' + item['shape_id'] if item.get('shape_id') else ''} by {item['by']}: "
              f"{item['reason']}")
    print(_sandbox_line([result]))
    if not profile.representative:
        print("note: CPU interpreter timings are not representative of any GPU")
    if args.json:
        from aka_tui.secrets import scrub

        Path(args.json).write_text(scrub(json.dumps(result.to_json(), indent=1)) + "\n")
        print(f"wrote {args.json}")
    failed = [r for r in result.shapes if not r.passed]
    for r in failed:
        if r.error and r.error.traceback_text and args.verbose:
            print(f"--- {r.shape_id} traceback ---\n{r.error.traceback_text}", file=sys.stderr)
    return 0 if not failed else 1


def cmd_illusion(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from aka_tui.bench.compare.illusion import render_illusion, run_illusion

    if not args.candidates:
        from aka_tui.errors import EvaluationError

        raise EvaluationError("--report illusion needs --candidates DIR")
    report = run_illusion(_load_suite(args), Path(args.candidates), _eval_options(args),
                          progress=lambda op, name: print(f"  {op}: {name}", file=sys.stderr))
    text = render_illusion(report)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from aka_tui.secrets import scrub

    (out / "illusion.json").write_text(scrub(json.dumps([asdict(r) for r in report.rows], indent=1)) + "\n")
    (out / "illusion.md").write_text(scrub("```\n" + text + "\n```\n"))
    print(f"wrote {out / 'illusion.json'} and {out / 'illusion.md'}")
    return 0


def _rescored_with_acceptances(report: Any, suite: Any, args: argparse.Namespace) -> Any:
    """The report with `--accept` recorded in every result it names, scored again (each op on its profile)."""
    from aka_tui.bench.roofline.hardware import get_profile
    from aka_tui.bench.scoring.bench_report import launch_floor_s
    from aka_tui.bench.scoring.score import aggregate, score_op

    report.results = [_accepted(r, args, per_op=True) for r in report.results]
    profiles = {report.hardware.name: report.hardware}

    def profile_of(result: Any) -> Any:
        name = str(result.provenance.get("hardware_profile") or report.hardware.name)
        if name not in profiles:
            profiles[name] = get_profile(name)
        return profiles[name]

    report.ops = [score_op(suite.problems[r.problem], r, profile_of(r), launch_floor_s(profile_of(r)))
                  for r in report.results if r.problem in suite.problems]
    report.aggregate = aggregate(report.ops)
    return report


def cmd_rescore(args: argparse.Namespace) -> int:
    from aka_tui.bench.scoring.bench_report import merge_reports, rescore_report
    from aka_tui.bench.scoring.report import render_text, write_reports

    suite = _load_suite(args)
    reports = []
    for path in args.rescore:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            from aka_tui.errors import EvaluationError

            raise EvaluationError(f"cannot read report {path}: {exc}") from None
        reports.append(rescore_report(data, suite))
    report = merge_reports(reports)  # several partial reports of one suite: later ones fill the missing ops
    if getattr(args, "accept", None):
        report = _rescored_with_acceptances(report, suite, args)
    stem = args.name or Path(args.rescore[0]).stem + "-rescored"
    json_path, md_path = write_reports(report, Path(args.out), stem)
    print(render_text(report))
    print(f"wrote {json_path} and {md_path}")
    return 0


def cmd_library_compare(args: argparse.Namespace) -> int:
    from aka_tui.bench.compare.library import render, run
    from aka_tui.errors import EvaluationError

    device, tier = run.resolve_run_device(args.device, args.tier)  # the CPU only as an explicit smoke dry-run
    shape_sets = run.parse_shape_sets(args.shapes)
    if args.rounds < 1:
        raise EvaluationError("--rounds must be at least 1")
    stem = args.name or f"library-compare-{tier}"
    from aka_tui.bench.sandbox.bwrap import resolve_mode

    if resolve_mode(args.sandbox)[0] == "bwrap":  # the candidates are imported in-process: run all of it inside
        return _library_compare_sandboxed(args, device, tier, stem)
    suite = _load_suite(args)
    partial = Path(args.out) / f"{stem}.partial.json"

    def checkpoint(report_so_far: Any) -> None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(_scrub(json.dumps(report_so_far.to_json(), default=str)) + "\n")

    report = run.run_library_compare(suite, device, tier, ops=args.ops.split(",") if args.ops else None,
                                    shape_sets=shape_sets, candidates_dir=Path(args.library_compare),
                                    rounds=args.rounds, hardware=args.hardware, checkpoint=checkpoint)
    json_path, md_path = render.write_reports(report, Path(args.out), stem)
    partial.unlink(missing_ok=True)
    print(render.render_text(report))
    print(f"wrote {json_path} and {md_path}")
    return 0 if not report.errors else 1


def _library_compare_sandboxed(args: argparse.Namespace, device: str, tier: str, stem: str) -> int:
    """The library comparison as a sandboxed `aka` command: the suite, the candidates and the measured hardware
    profiles read-only, its reports copied (scrubbed) into --out."""
    from dataclasses import replace

    from aka_tui.bench.evaluator.isolation import WorkerLimits
    from aka_tui.bench.sandbox.bwrap import package_dir
    from aka_tui.bench.sandbox.command import run_sandboxed_command
    from aka_tui.paths import aka_home

    candidates = Path(args.library_compare)
    if not candidates.is_absolute() and not candidates.is_dir() and (package_dir().parent / candidates).is_dir():
        candidates = package_dir().parent / candidates  # `kb/family` from outside the checkout
    candidates, suite_dir = candidates.resolve(), _suite_dir(args).resolve()
    child = ["bench", "--library-compare", str(candidates), "--suite", str(suite_dir), "--device", device,
             "--tier", tier, "--shapes", args.shapes, "--rounds", str(args.rounds), "--out", "{OUT}", "--name", stem]
    child += ["--ops", args.ops] if args.ops else []
    child += ["--hardware", args.hardware] if args.hardware else []
    limits = WorkerLimits(memory_bytes=int(args.memory_limit * (1 << 30))) if args.memory_limit else WorkerLimits()
    read_only = [candidates, suite_dir] + ([aka_home() / "hardware"] if (aka_home() / "hardware").is_dir() else [])
    return run_sandboxed_command(child, read_only, Path(args.out), device.startswith("cuda"),
                                 replace(limits.resources(1), cpu_s=None), args.sandbox)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.library_compare:  # before anything imports triton: a CPU dry-run must switch on its interpreter first
        return cmd_library_compare(args)
    from aka_tui.bench.evaluator.evaluate import resolve_device, resolve_tier
    from aka_tui.bench.scoring.report import render_text, write_reports
    from aka_tui.executors.suite import run_bench

    if args.report == "illusion":
        return cmd_illusion(args)
    if args.rescore:
        return cmd_rescore(args)
    suite = _load_suite(args)
    options = _eval_options(args)
    ops = args.ops.split(",") if args.ops else None
    executor = _executor(args)
    tier = resolve_tier(options, executor.device if executor.remote else resolve_device(options.device))
    selected = [suite.problems[o] for o in ops if o in suite.problems] if ops else list(suite.problems.values())
    progress = Progress(sum(p.tier_size(tier) for p in selected))
    stem = args.name or (f"bench-{args.baseline}" if args.baseline else "bench-candidates") + f"-{tier}"
    partial = Path(args.out) / f"{stem}.partial.json"

    def checkpoint(report_so_far: Any) -> None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(_scrub(json.dumps(report_so_far.to_json())) + "\n")

    report = run_bench(suite, options, baseline=args.baseline,
                       candidates_dir=Path(args.candidates) if args.candidates else None, ops=ops, progress=progress,
                       checkpoint=checkpoint, precompile_workers=args.precompile_workers,
                       executor=executor, naive=bool(getattr(args, "naive", False)))
    progress.finish()
    partial.unlink(missing_ok=True)
    if getattr(args, "accept", None):
        report = _rescored_with_acceptances(report, suite, args)
    json_path, md_path = write_reports(report, Path(args.out), stem)
    print(render_text(report))
    print(_sandbox_line(report.results))
    print(f"wrote {json_path} and {md_path}")
    return 0


def cmd_roofline(args: argparse.Namespace) -> int:
    from aka_tui.bench.roofline.bound import bound
    from aka_tui.bench.roofline.hardware import detect_profile, get_profile
    from aka_tui.bench.roofline.refresh import refresh
    from aka_tui.bench.scoring.report import text_table

    if args.from_report:
        from aka_tui.bench.roofline.refresh import import_from_report

        suite = _load_suite(args)
        try:
            report = json.loads(Path(args.from_report).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            from aka_tui.errors import EvaluationError

            raise EvaluationError(f"cannot read report {args.from_report}: {exc}") from None
        imported = import_from_report(suite.problems, report)
        print(", ".join(f"{k}: {v}" for k, v in sorted(imported.items())) or "nothing imported (problem hashes differ?)")
        return 0
    problem = _problem(args, args.problem)
    profile = get_profile(args.hardware) if args.hardware else detect_profile("auto")
    published = problem.source_format != "native"
    # A published directory's W/Q are the data's: only what it leaves out is counted (--recount: all of it).
    counted = refresh(problem, args.device, args.tier, only_missing=published and not args.recount)
    devices = sorted({d for times in problem.published_sol_ms.values() for d in times})
    rows = []
    for shape in problem.shapes_for(args.tier):
        entry = problem.roofline.get(shape.shape_id)
        published_ms = problem.published_sol_ms.get(shape.shape_id, {})
        sol = [f"{published_ms[d] * 1e3:.2f}" if d in published_ms else "-" for d in devices]
        if entry is None:
            rows.append([shape.shape_id, "-", "-", "-", "-", "-", *sol])
            continue
        b = bound(entry, profile)
        rows.append([shape.shape_id, f"{entry.flops:.4g}", f"{entry.bytes_total:.4g}", f"{b.arithmetic_intensity:.3g}",
                     f"{b.t_sol_s * 1e6:.2f}", f"{b.bottleneck} ({entry.path}, {entry.source})", *sol])
    print(f"{problem.name}: roofline on {profile.name}" + (f"; {counted} shape(s) counted here" if counted else ""))
    print(text_table(rows, ["shape", "W FLOP", "Q bytes", "FLOP/B", "T_SOL us", "bound",
                            *[f"published SOL us ({d})" for d in devices]]))
    if devices:
        print("published SOL times are the data's own figures for those devices, shown for comparison; "
              "S always uses T_SOL on the profile above")
    if published:
        from aka_tui.bench.problem.atrex import counted_cache_path
        from aka_tui.bench.problem.native import roofline_inputs_hash

        print(f"W/Q: {problem.roofline_path} (published); counted entries: "
              f"{counted_cache_path(problem.name, roofline_inputs_hash(problem.directory))}")
    else:
        print(f"cache: {problem.roofline_path}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from aka_tui.bench.problem.lookup import load_suite
    from aka_tui.bench.scoring.paper_render import write_paper
    from aka_tui.bench.scoring.paper_table import build_subjects, read_report

    reports = [read_report(Path(p)) for p in args.reports]
    problems: dict[str, Any] = {}
    suite_dirs = [Path(args.suite)] if args.suite else [Path(r.get("suite_dir", "")) for r in reports]
    for directory in dict.fromkeys(suite_dirs):
        if directory.is_dir():  # production figures come from the data; a report moved elsewhere still renders
            problems.update(load_suite(directory).problems)
    subjects = build_subjects(reports, problems)
    out = Path(args.out) if args.out else Path(args.reports[0]).parent
    stem = args.name or "paper-table"
    json_path, md_path, svg_path = write_paper(subjects, out, stem)
    for subject in subjects:
        a = subject.aggregate
        print(f"{subject.label}: S_agg {a.get('s_agg', 0):.4f}  S_raw_agg {a.get('s_raw_agg', 0):.4f}  "
              f"S_e2e_raw_agg {a.get('s_e2e_raw_agg', 0):.4f}  correct-and-real {a.get('real_op_rate', 0):.0%} "
              f"of {len(subject.rows)} ops  ({subject.wall_s:.0f} s)")
    print(f"wrote {md_path}, {svg_path} and {json_path}")
    return 0


def cmd_hw(args: argparse.Namespace) -> int:
    from aka_tui.bench.roofline.hardware import all_profiles, detect_profile, save_measured
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
    from aka_tui.bench.roofline.calibrate import calibrate

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


def _add_eval_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", help="suite directory (default: the shipped problems/)")
    p.add_argument("--tier", choices=["smoke", "full", "all"], help="shape tier (default: smoke on CPU, full on GPU)")
    p.add_argument("--device", default="auto", help="cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--hardware", help="roofline profile name (default: detected); see `aka hw list`")
    p.add_argument("--measured", action="store_true", help="score against the calibrated profile of this GPU")
    p.add_argument("--cases", type=int_at_least(1), default=3, help="seeded correctness cases per shape (default 3)")
    p.add_argument("--shape-timeout", type=positive_float, default=300.0,
                   help="seconds allowed per shape before the worker is killed")
    add_sandbox_flags(p)
    p.add_argument("--compare-eager", action="store_true", help="also time the eager reference (speed-up, fast_1)")
    p.add_argument("--compare-compile", action="store_true", help="also time torch.compile of the reference")
    p.add_argument("--own-share", type=fraction(low_open=True), default=0.9,
                   help="device-time share of the candidate's own kernels needed to count as real (GPU; default 0.9)")
    p.add_argument("--accept", action="append", metavar="KIND[=TARGET]",
                   help="accept a held verdict, recorded in the result: suspicious, or over_roofline=SHAPE "
                        "(aka bench: KIND=OP[:SHAPE]); repeatable, needs --accept-reason")
    p.add_argument("--accept-reason", metavar="TEXT", help="why the held verdict is accepted (recorded)")
    p.add_argument("--no-timed-verification", action="store_true",
                   help="do not check the timed calls (outputs, launches, device time): to measure what the checks cost")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="aka", description="Turn PyTorch operators into fast GPU kernels, scored against the hardware roofline.")
    parser.add_argument("--version", action="version", version=f"aka-tui {__version__}")
    parser.add_argument("--suite", dest="app_suite", metavar="DIR",
                        help="with no command: open the app on this suite (default: the shipped problems/)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("problems", help="list the benchmark suite", description="List the problems of a suite.")
    p.add_argument("--suite", help="suite directory (default: the shipped problems/)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.set_defaults(func=cmd_problems)

    p = sub.add_parser("eval", help="evaluate one candidate file on one problem",
                       description="Compile, check, audit for fallback and time CANDIDATE on PROBLEM's shapes, "
                                   "in a worker process; print S per shape. CANDIDATE may be a .py file, "
                                   "'eager' or 'compile' (the reference as a baseline).")
    p.add_argument("candidate", help="candidate .py file (class Model), or eager / compile")
    p.add_argument("--problem", required=True, help="problem name in the suite, or a problem directory")
    p.add_argument("--shape", action="append", help="evaluate only this shape id (repeatable)")
    p.add_argument("--json", help="write the result record (JSON) here")
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failing shapes")
    p.add_argument("--replay-seed", type=int, help="run exactly this seed (from a failure message) as the only case")
    p.add_argument("--fuzz", type=int_at_least(0),
                   help="fuzzed shapes to add (default 4 for a candidate file, 0 for baselines)")
    p.add_argument("--no-hardening", action="store_true",
                   help="the naive check only (allclose, no poison/fuzz/attribution/tamper checks): to measure their cost")
    _add_eval_flags(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("bench", help="evaluate a candidate set or a baseline over the suite",
                       description="Evaluate every problem of the suite and print per-op S and S_agg; "
                                   "writes JSON and Markdown reports.")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--baseline", choices=["eager", "compile"], help="score the reference itself (eager or torch.compile)")
    group.add_argument("--candidates", help="directory with <op>.py or <op>/*.py candidate files")
    p.add_argument("--ops", help="comma-separated subset of problems")
    p.add_argument("--naive", action="store_true",
                   help="also run the naive check (one input, allclose 1e-2, nothing else) on every candidate and "
                        "record its verdict per shape: the paper table's naive pass rate (never scored)")
    p.add_argument("--precompile-workers", type=int_at_least(0), default=0,
                   help="with --baseline compile: compile every shape first in N parallel processes (warms "
                        "inductor's caches; nothing is timed meanwhile)")
    _add_executor_args(p)
    group.add_argument("--rescore", nargs="+", metavar="REPORT",
                   help="score stored report JSON(s) again with the suite's current weights (nothing is re-run); "
                        "several partial reports of one suite are merged, the first report winning per op")
    group.add_argument("--library-compare", nargs="?", const="kb/family", metavar="DIR",
                       help="the candidates of DIR (default kb/family) against torch.matmul, "
                            "torch._scaled_mm and scaled_dot_product_attention on the same problems, timed side by "
                            "side (needs a CUDA GPU; --device cpu --tier smoke is a dry-run); docs/scoring.md")
    p.add_argument("--shapes", default="largest,weighted",
                   help="with --library-compare: comma-separated largest (by FLOPs), weighted (weight > 0), all "
                        "(default largest,weighted)")
    p.add_argument("--rounds", type=int_at_least(1), default=3,
                   help="with --library-compare: interleaved timing rounds per side (default 3; median of rounds)")
    p.add_argument("--report", choices=["scores", "illusion"], default="scores",
                   help="illusion: with --candidates, pass rates under a naive check vs the hardened one vs real kernels")
    p.add_argument("--out", default="reports", help="directory for the JSON and Markdown reports (default reports/)")
    p.add_argument("--name", help="report file stem")
    _add_eval_flags(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("report", help="the benchmark table (Markdown + SVG) from one or more bench reports",
                       description="Per operator: pass rates (naive, hardened, correct and real), S_op, S_e2e, "
                                   "speed-up over eager and torch.compile, the production kernels' S from the data; "
                                   "then S_agg, fast_1 and the aggregate pass rates. Give baseline reports "
                                   "(aka bench --baseline eager|compile) beside a candidate report for its speed-ups.")
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="`aka bench` JSON reports")
    p.add_argument("--suite", help="the suite directory (default: the one each report names), for production timings")
    p.add_argument("--out", help="output directory (default: beside the first report)")
    p.add_argument("--name", help="file stem (default paper-table)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("roofline", help="compute and cache W/Q per shape, print T_SOL",
                       description="Recount the semantic FLOPs and bytes of every shape of PROBLEM (running the "
                                   "reference once per shape), store them in roofline.json and print T_SOL.")
    p.add_argument("problem", nargs="?", help="problem name or directory")
    p.add_argument("--suite", help="suite directory")
    p.add_argument("--from-report", help="instead: import W/Q of every shape from an `aka bench` JSON report")
    p.add_argument("--tier", choices=["smoke", "full", "all"], default="all")
    p.add_argument("--device", default="auto", help="where to run the reference: meta (try first), cpu or cuda")
    p.add_argument("--hardware", help="profile for T_SOL (default: detected)")
    p.add_argument("--recount", action="store_true",
                   help="published directories: count every shape here too (their published W/Q are kept otherwise)")
    p.set_defaults(func=cmd_roofline)

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

    from aka_tui.agent.commands import register as register_optimize
    from aka_tui.knowledge.commands import register as register_kb
    from aka_tui.tuning.commands import register as register_sweep

    register_sweep(register_kb(sub))  # `aka kb sweep` lives in aka_tui.tuning (it needs the benchmark core)
    register_optimize(sub)
    from aka_tui.trace.commands import register as register_trace

    register_trace(sub)
    return parser


def _open_app(run: Callable[..., int] | None, suite: str | None = None) -> int:
    """`aka` with no subcommand: the Textual app (`run(app)` replaces running it, for tests)."""
    try:
        from aka_tui.tui.app import AkaApp, run_app
    except ImportError as exc:
        print(f"the app needs textual ({exc}); run scripts/setup.sh, or use `aka --help` for the commands",
              file=sys.stderr)
        return EXIT_ERROR
    suite_dir = Path(suite) if suite else None
    if suite_dir is not None and not suite_dir.is_dir():
        print(f"aka: suite directory {suite} does not exist", file=sys.stderr)
        return EXIT_ERROR
    if run is not None:
        return int(run(AkaApp(suite_dir=suite_dir)))
    return run_app(suite_dir)


def main(argv: list[str] | None = None, run: Callable[..., int] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        return _open_app(run, getattr(args, "app_suite", None))
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)  # unwind like Ctrl-C: workers are killed on the way
    try:
        return int(args.func(args))
    except AkaError as exc:
        print(f"{exc.title}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except Terminated:
        print("terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is so that every running worker is killed while unwinding."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
