"""`aka eval CANDIDATE --problem OP`: one candidate (or a baseline) on one problem, S per shape."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aka_tui.argtypes import int_at_least
from aka_tui.bench.measure.job import BASELINE_KINDS
from aka_tui.bench.measure.results import ShapeResult
from aka_tui.cli.arguments import add_eval_flags
from aka_tui.cli.from_args import accepted, eval_options, find_problem
from aka_tui.cli.output import sandbox_line


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="evaluate one candidate file on one problem",
                       description="Compile, check, audit for fallback and time CANDIDATE on PROBLEM's shapes, "
                                   "in a worker process; print S per shape. CANDIDATE may be a .py file, "
                                   "'eager', 'compile' or 'compile-max-autotune' (the reference as a baseline).")
    p.add_argument("candidate", help="candidate .py file (class Model), or eager / compile / compile-max-autotune")
    p.add_argument("--problem", required=True, help="problem name in the suite, or a problem directory")
    p.add_argument("--shape", action="append", help="evaluate only this shape id (repeatable)")
    p.add_argument("--json", help="write the result record (JSON) here")
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failing shapes")
    p.add_argument("--replay-seed", type=int, help="run exactly this seed (from a failure message) as the only case")
    p.add_argument("--fuzz", type=int_at_least(0),
                   help="fuzzed shapes to add (default 4 for a candidate file, 0 for baselines)")
    p.add_argument("--no-hardening", action="store_true",
                   help="the naive check only (allclose, no poison/fuzz/attribution/tamper checks): to measure their cost")
    p.add_argument("--compile-for", metavar="ARCH",
                   help="instead of evaluating: compile the candidate's Triton kernels for a GPU architecture (sm_90, "
                        "sm_80, ...) on this machine, no GPU needed, at --shape or the first smoke shape, sandboxed")
    add_eval_flags(p)
    p.set_defaults(func=cmd_eval)


def _compile_for(args: argparse.Namespace, problem: Any) -> int:
    """`--compile-for`: one line saying whether every launch compiles for the architecture, and the sandbox."""
    from aka_tui.bench.evaluator.target_compile import compile_for_target, parse_arch

    if args.candidate in BASELINE_KINDS:
        print(f"--compile-for compiles a candidate file's kernels; {args.candidate!r} is a baseline", file=sys.stderr)
        return 2
    result = compile_for_target(problem.directory, Path(args.candidate), parse_arch(args.compile_for), args.shape,
                                getattr(args, "sandbox", None))
    print(f"{problem.name}: {Path(args.candidate).name}: {result.line()}")
    print(result.sandbox, file=sys.stderr)
    return 0 if result.ok else 1


def cmd_eval(args: argparse.Namespace) -> int:
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, evaluate_candidate, resolve_device, resolve_profile
    from aka_tui.bench.scoring.bench_report import launch_floor_s
    from aka_tui.bench.scoring.report import text_table
    from aka_tui.bench.scoring.score import score_op

    problem = find_problem(args, args.problem)
    if args.compile_for:
        return _compile_for(args, problem)
    options = eval_options(args)
    if args.shape:
        options.shape_ids = args.shape
    options.replay_seed = args.replay_seed
    options.fuzz = args.fuzz
    options.hardening = not args.no_hardening
    spec = CandidateSpec(args.candidate) if args.candidate in BASELINE_KINDS else CandidateSpec.file(args.candidate)
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    seen: set[str] = set()

    def shape_done(r: ShapeResult) -> None:
        # a timed shape is reported again once its baselines are timed
        print(f"  {r.shape_id}: {'baselines timed' if r.shape_id in seen else r.status}", file=sys.stderr)
        seen.add(r.shape_id)

    result = evaluate_candidate(problem, spec, options, on_shape=shape_done)
    result = accepted(result, args)
    op = score_op(problem, result, profile, launch_floor_s(profile))
    print(f"{problem.name}: candidate {spec.label} on {device} (profile {profile.name})")
    print(text_table(_shape_rows(result, op),
                     ["shape", "status", "kernel", "own", "T ms", "T_SOL ms", "S", "S_raw", "detail"]))
    print(f"S_op = {op.s_op:.4f}   S_raw_op = {op.s_raw_op:.4f}   correct={op.correct} real={op.real}"
          + (f"   fuzz failures: {', '.join(op.fuzz_failures)}" if op.fuzz_failures else ""))
    speedups = _speedup_line(op)
    if speedups:
        print(speedups)
    _print_findings(result, op)
    print(sandbox_line([result]))
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


def _shape_rows(result: Any, op: Any) -> list[list[str]]:
    """One table row per evaluated shape: status, real or fallback, own share, times, S, why it failed."""
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
    return rows


def _speedup_line(op: Any) -> str:
    """The speed-ups over the baselines timed beside the candidate (--compare-...), or '' when none was."""
    timed = [(name, value) for name, value in (("eager", op.speedup_vs_eager), ("torch.compile", op.speedup_vs_compile),
                                               ("torch.compile max-autotune", op.speedup_vs_compile_max))
             if value is not None]
    return ("speed-up (weighted geometric mean over shapes): " + ", ".join(f"vs {n} {v:.2f}x" for n, v in timed)
            if timed else "")


def _print_findings(result: Any, op: Any) -> None:
    """Failures, the static scan, held verdicts and recorded acceptances, below the table."""
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
