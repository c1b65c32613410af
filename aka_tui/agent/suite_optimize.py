"""`aka optimize --suite DIR`: one offline session per operator of a suite directory under a stated budget, then
the table of what the agent reached: the path each operator started from, real or fallback (own_share), S_op
of the eager reference and of the incumbent, the speed-up over torch.compile (and over its max-autotune mode
when asked), and S_agg under the suite's
weights. An operator the agent could not start on gets the one-line reason instead of a session.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from aka_tui.errors import AkaError

HEADERS = ["op", "w%", "path", "kernel", "min own_share", "S_op eager (S_raw)", "S_op after", "vs compile",
           "iters", "s", "note"]
MAX_AUTOTUNE_HEADER = "vs max-autotune"  # after "vs compile", with --compare-compile-max-autotune


def add_suite_flags(p: argparse.ArgumentParser) -> None:
    """`aka optimize`'s flags for a whole suite directory (`--suite` and the options that go with it)."""
    p.add_argument("--suite", metavar="DIR",
                   help="run the offline proposer on every operator of a suite directory (native or Atrex-Bench) "
                        "and print the path used, real or fallback, S_op eager → after and S_agg per operator")
    p.add_argument("--ops", help="with --suite: only these operators (comma-separated directory names)")
    p.add_argument("--shard", metavar="K/N",
                   help="with --suite: only the K-th of N interleaved parts of the operators (sorted by name), to "
                        "split a suite over several runs sharing --sessions")
    p.add_argument("--score-only", action="store_true",
                   help="with --suite: run nothing; print the table from the newest session of each operator under "
                        "--sessions")
    p.add_argument("--op-timeout", type=float, default=600.0, metavar="S",
                   help="with --suite: stop an operator's session after S seconds (it keeps what it committed; "
                        "default 600)")
    p.add_argument("--compare-compile", action="store_true",
                   help="with --suite: re-evaluate each incumbent once with torch.compile timed beside it "
                        "(the speed-up column)")
    p.add_argument("--compare-compile-max-autotune", dest="compare_compile_max", action="store_true",
                   help="with --suite: also time torch.compile in max-autotune mode, without CUDA graphs (the vs "
                        "max-autotune column)")


def _session_path(sessions: Path, problem: str) -> Path | None:
    candidates = sorted(sessions.glob(f"{problem}-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    return candidates[0] if candidates else None


def _start_path(session: Path | None) -> str:
    """The path of the session's first recorded iteration (what the agent started from)."""
    if session is None:
        return "-"
    first = session / "iterations" / "0001" / "proposal.json"
    try:
        return str(json.loads(first.read_text()).get("path") or "-")
    except (OSError, ValueError):
        return "-"


def _compile_speedup(problem: Any, session: Path | None, options: Any, profile: Any, default_mode: bool = True,
                     max_autotune: bool = False) -> tuple[tuple[float | None, float | None], str]:
    """The incumbent re-evaluated once with torch.compile timed beside it, in its default mode and/or in
    max-autotune mode: weighted geomeans of T_compile / T and T_compile_max / T (None where not timed)."""
    from aka_tui.agent.suite_score import incumbent_step
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, evaluate_candidate
    from aka_tui.bench.scoring.score import score_op
    from aka_tui.record.history import read_steps

    if session is None:
        return (None, None), ""
    steps, _ = read_steps(session)
    step = incumbent_step(steps)
    if step is None:
        return (None, None), ""
    result = evaluate_candidate(problem, CandidateSpec.file(step.kernel_path), options.__class__(
        **{**options.__dict__, "compare_compile": default_mode, "compare_compile_max": max_autotune, "fuzz": 0}))
    score = score_op(problem, result, profile)
    return ((score.speedup_vs_compile, score.speedup_vs_compile_max),
            "" if score.correct else "incorrect when re-evaluated")


def _speedup_cells(args: argparse.Namespace, problem: Any, session: Path | None, options: Any, profile: Any,
                   correct: bool) -> tuple[list[str], str]:
    """The "vs compile" cell (and "vs max-autotune" with --compare-compile-max-autotune) of one operator, and a
    note when the incumbent was not correct when re-evaluated for them."""
    max_autotune = bool(getattr(args, "compare_compile_max", False))
    speedups: tuple[float | None, float | None] = (None, None)
    note = ""
    if (args.compare_compile or max_autotune) and correct:
        speedups, note = _compile_speedup(problem, session, options, profile, bool(args.compare_compile), max_autotune)
    cells = ["-" if value is None else f"{value:.2f}x" for value in speedups]
    return cells if max_autotune else cells[:1], note


def _child_command(args: argparse.Namespace, problem_dir: Path) -> list[str]:
    """`aka optimize PROBLEM_DIR` with the suite run's budgets, for one operator."""
    command = [sys.executable, "-m", "aka_tui", "optimize", str(problem_dir), "--proposer", "offline",
               "--iterations", str(args.iterations), "--sessions", str(args.sessions), "--device", str(args.device),
               "--cases", str(args.cases), "--seed", str(args.seed), "--dropout", str(args.dropout),
               "--transfer-budget", str(args.transfer_budget), "--no-propose"]
    for flag, value in (("--wall-time", args.wall_time), ("--tier", args.tier), ("--target", args.target),
                        ("--remeasure-rounds", args.remeasure_rounds), ("--compile-for", getattr(args, "compile_for", None))):
        if value is not None:
            command += [flag, str(value)]
    switches = (("--no-kb", args.no_kb), ("--no-screen", args.no_screen), ("--no-baseline", args.no_baseline))
    return command + [flag for flag, on in switches if on]


def _run_one(command: list[str], timeout_s: float) -> str:
    """Run one operator's session in its own process group; "" or why it did not finish."""
    import os
    import signal
    import subprocess

    child = subprocess.Popen(command, start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the session and its evaluation workers
        child.communicate()
        return f"stopped after {timeout_s:.0f} s (--op-timeout); its session keeps what it committed"
    lines = [line for line in (stderr or "").splitlines() if line.strip()]
    sys.stderr.write("".join(f"  {line}\n" for line in lines[-12:]))
    if child.returncode != 0:
        return lines[-1][:300] if lines else f"exit status {child.returncode}"
    return ""


def _shard(text: str) -> tuple[int, int]:
    """`K/N` → (K, N): the K-th of N interleaved parts of the suite's operators (sorted by name)."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise AkaError(f"--shard {text!r}: write K/N, e.g. 1/3") from None
    if not 1 <= index <= count:
        raise AkaError(f"--shard {text!r}: K must be between 1 and N")
    return index, count


def cmd_optimize_suite(args: argparse.Namespace) -> int:
    """Run the offline agent over every operator of `args.suite` and print the table."""
    from aka_tui.agent.suite_score import score_sessions
    from aka_tui.bench.evaluator.evaluate import EvalOptions, resolve_device, resolve_profile, resolve_tier
    from aka_tui.bench.problem.lookup import load_suite
    from aka_tui.bench.scoring.report import aggregate_lines, text_table

    suite = load_suite(Path(args.suite))
    if args.ops:
        wanted = [o.strip() for o in args.ops.split(",") if o.strip()]
        unknown = [o for o in wanted if o not in suite.problems]
        if unknown:
            raise AkaError(f"--ops: {', '.join(unknown)} not in {suite.directory} ({', '.join(suite.problems)})")
        suite.problems = {k: v for k, v in suite.problems.items() if k in wanted}
        suite.errors = {}
    if args.shard:
        index, count = _shard(args.shard)
        names = sorted(suite.problems)
        suite.problems = {k: suite.problems[k] for k in names[index - 1::count]}
        suite.errors = {}
    sessions = Path(args.sessions)
    sessions.mkdir(parents=True, exist_ok=True)
    options = EvalOptions(device=args.device, tier=args.tier, cases=args.cases)
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    tier = resolve_tier(options, device)
    if args.score_only:
        print(f"{len(suite.problems)} operators of {suite.directory}: the newest session of each under {sessions}, "
              f"scored with the suite's weights ({profile.name}, {tier} tier); nothing run", flush=True)
    else:
        wall = f"{args.wall_time:g} s" if args.wall_time else "no limit"
        print(f"optimizing {len(suite.problems)} operators of {suite.directory} on {device} ({profile.name}, {tier} "
              f"tier): offline proposer, {args.iterations} iterations, {wall} of loop wall time and at most "
              f"{args.op_timeout:.0f} s per operator", flush=True)
    notes: dict[str, str] = {name: f"not loaded: {err}" for name, err in suite.errors.items()}
    for name, err in suite.errors.items():
        print(f"warning: skipping operator {name}: {err}", flush=True)
    seconds: dict[str, float] = {}
    for name, problem in suite.problems.items():
        if args.score_only:
            break
        started = time.monotonic()
        print(f"== {name}", flush=True)
        why = _run_one(_child_command(args, problem.directory), args.op_timeout)
        if why:
            notes[name] = why
        seconds[name] = time.monotonic() - started
        print(f"== {name}: {seconds[name]:.0f} s" + (f"; {why}" if why else ""), flush=True)
    report, outcomes, warnings = score_sessions(sessions, suite, tier, list(suite.problems))
    by_problem = {o.problem: o for o in outcomes}
    rows = []
    for op in report.ops:
        o = by_problem.get(op.problem)
        session = _session_path(sessions, op.problem) if o else None
        speedups, note = _speedup_cells(args, suite.problems[op.problem], session, options, profile, op.correct)
        kernel = "real" if op.correct and op.real else ("fallback" if op.correct else "-")
        rows.append([op.problem, f"{op.weight * 100:.1f}", _start_path(session), kernel,
                     "-" if not o or o.min_own_share is None else f"{o.min_own_share:.2f}",
                     "0 (" + ("-" if not o or o.baseline_s_raw is None else f"{o.baseline_s_raw:.3f}") + ")",
                     f"{op.s_op:.3f}", *speedups,
                     f"{o.accepted_iteration or '-'}/{o.iterations}" if o else "-",
                     f"{seconds.get(op.problem, 0.0):.0f}", notes.get(op.problem, note)[:160]])
    at = HEADERS.index("vs compile") + 1
    print(text_table(rows, HEADERS[:at] + [MAX_AUTOTUNE_HEADER] * bool(getattr(args, "compare_compile_max", False))
                     + HEADERS[at:]))
    for line in aggregate_lines(report.aggregate)[:2]:
        print(line)
    real = sum(1 for op in report.ops if op.correct and op.real)
    unloaded = f" ({len(suite.errors)} more not loaded: {', '.join(sorted(suite.errors))})" if suite.errors else ""
    print(f"real kernels: {real} of {len(report.ops)} operators{unloaded}; S_agg {report.aggregate.s_agg:.4f} under "
          f"the suite's weights; {sum(seconds.values()):.0f} s in all")
    for warning in warnings:
        print(f"warning: {warning}")
    return 0
