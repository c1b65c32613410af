"""`aka optimize PROBLEM`: run the measure–revise loop headless, with a progress display."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

from aka_tui.agent.proposers import DEFAULT_PROPOSER, PROPOSER_NAMES, Proposer
from aka_tui.argtypes import add_sandbox_flags, fraction, int_at_least, non_negative_float, positive_float
from aka_tui.errors import ProposerError

DEFAULT_ITERATIONS = 8


def _rounds(text: str) -> int:
    """argparse type of --remeasure-rounds: an integer ≥ 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative (0 turns the re-measurement off)")
    return value


def _limits(args: argparse.Namespace) -> Any:
    """The workers' limits and sandbox from the command line."""
    from aka_tui.bench.evaluator.isolation import WorkerLimits

    limits = WorkerLimits(sandbox=args.sandbox)
    if args.memory_limit is not None:
        limits.memory_bytes = int(args.memory_limit * (1 << 30))
    return limits


def _check_sandbox(proposer: str, args: argparse.Namespace) -> None:
    """Model-written candidates run only in a sandbox unless --unsafe-no-sandbox says otherwise; say which."""
    from aka_tui.bench.sandbox.bwrap import require_sandbox_for_model, resolve_mode

    if proposer == "anthropic":
        require_sandbox_for_model(args.sandbox, args.unsafe_no_sandbox)
    mechanism, note = resolve_mode(args.sandbox)
    print(f"candidates run in sandbox: {mechanism}" + (f" ({note})" if note else ""))


def _retriever(args: argparse.Namespace, problem: Any, profile: Any) -> Callable[[str], tuple[list[str], str]] | None:
    if args.no_kb:
        return None
    from aka_tui.agent.retriever import make_retriever

    return make_retriever(problem, profile, lambda m: print(f"warning: {m}" if "unavailable" in m else m,
                                                             file=sys.stderr))


def _make_proposer(kind: str, problem: Any, profile: Any, seed: int, model: str | None,
                   replay_from: str | None, done: int = 0, device: str = "cpu", tier: str | None = None,
                   start: str | None = None, transfer_budget_s: float = 60.0,
                   iterations: int | None = None) -> Proposer:
    """The proposer of a session, from the registry; `done` recorded iterations are skipped by a replay proposer
    (resume). The offline proposer starts from a person's kernel (`start`), the knowledge base's kernel for the
    operator, a transferred one or a compiler seed, whichever applies first (aka_tui/agent/starting_point.py)."""
    from aka_tui.agent.proposers import ProposerRequest, make_proposer

    return make_proposer(ProposerRequest(
        kind, problem, profile, seed=seed, model=model, replay_from=replay_from, done=done, device=device, tier=tier,
        start=start, transfer_budget_s=transfer_budget_s, iterations=iterations,
        log=lambda m: print(m, file=sys.stderr),
        replay_missing="--proposer replay needs --from SESSION_DIR (a recorded session)"))


def _tag_best(session: Any, problem_name: str, best: Any) -> None:
    """Tag the session's best kernel `<op>-best` (`<op>-best-NNNN` when a resumed run already used that name)."""
    if best is None or not best.sha:
        return
    tags = {t.name: str(t.commit.hexsha) for t in session.repo.tags}
    if best.sha in tags.values():
        tag = next(name for name, sha in tags.items() if sha == best.sha)
    else:
        name = f"{problem_name}-best"
        tag = session.tag_accepted(best.sha, name if name not in tags else f"{name}-{best.iteration:04d}")
    print(f"best kernel: {session.path}/iterations/{best.iteration:04d}/kernel.py (tag {tag})")


def _progress_printer() -> Callable[[Any], None]:
    """Prints the loop's events as progress lines with the elapsed time."""
    started = time.monotonic()

    def show(event: Any) -> None:
        d = event.data
        elapsed = f"{time.monotonic() - started:7.1f}s"
        if event.kind == "baseline_measured":
            print(f"{elapsed}  baseline (eager reference): S_raw_op {d['s_raw']:.4f} — a fallback, S = 0")
        elif event.kind == "baseline_skipped":
            print(f"{elapsed}  baseline not measured (--no-baseline): the eager reference is a fallback, S = 0")
        elif event.kind == "knowledge_retrieved":
            print(f"{elapsed}  iter {d['iteration']}: knowledge: {', '.join(d['ids'][:6])}")
        elif event.kind == "candidate_proposed":
            print(f"{elapsed}  iter {d['iteration']}: [{d.get('path') or '-'}] {d['rationale']}")
        elif event.kind == "candidates_screened_in_parallel":
            print(f"{elapsed}  iter {d['iteration']}: best-of-{d['k']} screened in parallel: S_op "
                  + ", ".join(f"{s:.4f}" for s in d["s_ops"]) + f"; keeping #{d['best_rank'] + 1}")
        elif event.kind == "candidate_screened" and not d["promising"]:
            state = ("correct" if d["correct"] else "incorrect") + ("" if d["real"] else ", fallback")
            print(f"{elapsed}  iter {d['iteration']}: screened on the weighted shapes: S_op {d['s_op']:.4f} ({state}) "
                  f"vs incumbent {d['incumbent_s']:.4f}: not worth a full evaluation"
                  + (f" — {d['why']}" if d.get("why") else ""))
        elif event.kind == "candidates_remeasured":
            rounds = f"{d.get('rounds', len(d['samples']['candidate']))} of {d.get('rounds_planned', '?')} rounds"
            print(f"{elapsed}  iter {d['iteration']}: re-measured with the incumbent, interleaved ({rounds}"
                  + (f"; {d['reason']}" if d.get("reason") else "") + f"): {'better' if d['accepted'] else 'not better'}")
        elif event.kind == "remeasure_skipped":
            print(f"{elapsed}  iter {d['iteration']}: {d['reason']}; not accepted")
        elif event.kind == "candidate_evaluated" and d.get("screened_out"):
            pass
        elif event.kind == "candidate_evaluated":
            verdict = "ACCEPTED" if d["accepted"] else "rejected"
            state = ("correct" if d["correct"] else "incorrect") + ("" if d["real"] else ", fallback")
            print(f"{elapsed}  iter {d['iteration']}: S_op {d['s_op']:.4f} ({state}) {verdict}"
                  + (f" — {d['why']}" if d.get("why") and not d["correct"] else ""))
        elif event.kind == "session_finished":
            print(f"{elapsed}  done: {d['reason']}; best S_op {d['best_s']:.4f} (iteration {d['best_iteration']})")

    return show


def cmd_optimize(args: argparse.Namespace) -> int:
    from aka_tui.agent.loop import AgentLoop, LoopConfig
    from aka_tui.agent.replay import ReplayProposer
    from aka_tui.bench.evaluator.evaluate import EvalOptions, resolve_device, resolve_profile, resolve_tier
    from aka_tui.bench.problem.lookup import find_problem
    from aka_tui.record.recovery import claim, unlock_session
    from aka_tui.record.session_repo import SessionRepo

    if args.resume:
        return _resume(args)
    if getattr(args, "suite", None):
        from aka_tui.agent.suite_optimize import cmd_optimize_suite

        if args.problem or args.proposer != "offline" or args.start:
            raise ProposerError("--suite DIR runs the offline proposer on every operator of DIR; drop PROBLEM, "
                                "--proposer and --start")
        args.iterations = DEFAULT_ITERATIONS if args.iterations is None else args.iterations
        return cmd_optimize_suite(args)
    if not args.problem:
        raise ProposerError("aka optimize needs a PROBLEM, or --resume ID to continue a recorded session")
    if args.iterations is None:
        args.iterations = DEFAULT_ITERATIONS
    problem = find_problem(args.problem)
    _check_sandbox(args.proposer, args)
    options = EvalOptions(device=args.device, tier=args.tier, cases=args.cases, limits=_limits(args))
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    proposer = _make_proposer(args.proposer, problem, profile, args.seed, args.model, args.replay_from,
                              device=device, tier=resolve_tier(options, device), start=args.start,
                              transfer_budget_s=args.transfer_budget, iterations=args.iterations)
    if isinstance(proposer, ReplayProposer):
        args.iterations = min(args.iterations, proposer.remaining)
    name = f"{problem.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    rounds = LoopConfig.remeasure_rounds if args.remeasure_rounds is None else args.remeasure_rounds
    session = SessionRepo.create(Path(args.sessions) / name, {
        "problem": problem.name, "problem_hash": problem.content_hash, "proposer": args.proposer, "seed": args.seed,
        "device": device, "hardware_profile": profile.name, "iterations": args.iterations, "dropout_p": args.dropout,
        "problem_dir": str(problem.directory.resolve()), "tier": resolve_tier(options, device), "cases": args.cases,
        "screen": not args.no_screen, "kb": not args.no_kb, "model": args.model, "remeasure_rounds": rounds,
        "replay_from": str(Path(args.replay_from).resolve()) if args.replay_from else None,
        "start": str(Path(args.start).resolve()) if args.start else None,
        "start_path": getattr(proposer, "path", args.proposer), "compile_for": args.compile_for})
    claim(session)
    show = _progress_printer()
    config = LoopConfig(iterations=args.iterations, wall_time_s=args.wall_time, target_s=args.target,
                        dropout_p=args.dropout, seed=args.seed, max_tokens=args.max_tokens, max_cost_usd=args.max_cost,
                        screen=not args.no_screen, best_of=args.best_of, remeasure_rounds=rounds,
                        baseline=not args.no_baseline, compile_for=_compile_for(args.compile_for))
    executor = None
    if args.best_of > 1:
        from aka_tui.executors.local import LocalExecutor

        executor = LocalExecutor(device, gpus=args.gpus, cpu_workers=args.best_of)
    loop = AgentLoop(problem, proposer, profile, options, config, session.path / ".work", session,
                     retrieve=_retriever(args, problem, profile), on_event=show, executor=executor)
    try:
        outcome = loop.run()
    finally:
        unlock_session(session.path)
    _tag_best(session, problem.name, outcome.incumbent)
    _report(args, session, problem, proposer, outcome, profile, options.tier or resolve_tier(options, device))
    return 0


def _resume(args: argparse.Namespace) -> int:
    """`aka optimize --resume ID`, holding the session's lock throughout (a second resume stops with one line)."""
    from aka_tui.record.listing import resolve_session
    from aka_tui.record.recovery import lock_session, unlock_session

    path = resolve_session(args.resume, Path(args.sessions))
    lock_session(path)  # atomic, before anything in the repository is touched
    try:
        return _resume_session(args, path)
    finally:
        unlock_session(path)


def _resume_session(args: argparse.Namespace, path: Path) -> int:
    """`aka optimize --resume ID`: continue a recorded (possibly killed) session after its last commit, with
    the proposer, seed, dropout, device and tier recorded in session.json."""
    from aka_tui.agent import resume
    from aka_tui.agent.loop import AgentLoop, LoopConfig, LoopOutcome
    from aka_tui.agent.replay import ReplayProposer
    from aka_tui.bench.evaluator.evaluate import EvalOptions, resolve_device, resolve_profile, resolve_tier
    from aka_tui.bench.problem.lookup import find_problem
    from aka_tui.errors import AkaError
    from aka_tui.record.recovery import claim, discard_uncommitted, running_owner
    from aka_tui.record.session_repo import SessionError, SessionRepo, read_meta

    meta = read_meta(path)
    session = SessionRepo.open(path)
    owner = running_owner(path)  # we hold the lock; a live recorded owner is an aka without one, or a reused pid
    if owner is not None and not args.force:
        raise SessionError(f"session {path.name} looks running (process {owner}); stop it first, or pass --force")
    recorded = str(meta.get("problem", ""))
    if args.problem and Path(args.problem).name != recorded:
        raise SessionError(f"session {path.name} optimised {recorded!r}, not {args.problem!r}")
    problem = find_problem(recorded, recorded=[args.problem, meta.get("problem_dir")])
    try:
        device = resolve_device(args.device if args.device != "auto" else str(meta.get("device", "auto")))
    except AkaError:
        if not args.force:
            raise SessionError(f"session {path.name} ran on {meta.get('device')}, which this machine does not "
                               "have (--force continues here)") from None
        device = resolve_device("auto")
    _check_sandbox(str(meta.get("proposer", "offline")), args)
    options = EvalOptions(device=device, tier=args.tier or meta.get("tier"), cases=int(meta.get("cases", args.cases)),
                          limits=_limits(args))
    profile = resolve_profile(options, device)
    for difference in resume.check_resumable(meta, problem, profile, args.force):
        print(f"warning (--force): {difference}", file=sys.stderr)
    discarded = discard_uncommitted(session)
    attempts = resume.rebuild_attempts(session, problem, profile)
    wins = [a for a in attempts if a.accepted]
    incumbent = wins[-1] if wins else None
    for a in resume.missing_evaluated_events(session, attempts):  # killed between a commit and its event
        session.events.append("candidate_evaluated", iteration=a.iteration, s_op=a.score.s_op, s_raw=a.score.s_raw_op,
                              correct=a.score.correct, real=a.score.real, accepted=a.accepted, sha=a.sha,
                              recovered=True)
    first = session.next_iteration()
    budget = int(meta.get("iterations", DEFAULT_ITERATIONS))
    iterations = args.iterations if args.iterations is not None else max(budget - (first - 1), 0)
    proposer = _make_proposer(str(meta.get("proposer", "offline")), problem, profile, int(meta.get("seed", 0)),
                              meta.get("model") or args.model, meta.get("replay_from") or args.replay_from,
                              done=first - 1, device=device, tier=options.tier or resolve_tier(options, device),
                              start=meta.get("start"))
    if isinstance(proposer, ReplayProposer):
        iterations = min(iterations, proposer.remaining)
    resume.adopt_persons_incumbent(proposer, incumbent)
    print(f"resuming {path.name} at iteration {first}: {len(attempts)} committed candidate(s) kept; incumbent "
          + (f"iteration {incumbent.iteration} (S_op {incumbent.score.s_op:.4f})" if incumbent else "none yet")
          + (f"; discarded uncommitted {', '.join(discarded)}" if discarded else ""))
    if iterations <= 0:
        print(f"the session's budget of {budget} iterations is spent; pass --iterations N to run N more")
        _tag_best(session, problem.name, incumbent)
        return 0
    session.events.append("session_resumed", from_iteration=first, iterations=iterations, discarded=discarded,
                          incumbent_iteration=incumbent.iteration if incumbent else None)
    claim(session)
    config = LoopConfig(iterations=iterations, wall_time_s=args.wall_time, target_s=args.target,
                        dropout_p=float(meta.get("dropout_p", args.dropout)), seed=int(meta.get("seed", 0)),
                        max_tokens=args.max_tokens, max_cost_usd=args.max_cost,
                        screen=bool(meta.get("screen", not args.no_screen)) and not args.no_screen,
                        remeasure_rounds=int(meta.get("remeasure_rounds", LoopConfig.remeasure_rounds))
                        if args.remeasure_rounds is None else args.remeasure_rounds,
                        compile_for=_compile_for(args.compile_for or meta.get("compile_for")))
    args.no_kb = args.no_kb or meta.get("kb") is False
    loop = AgentLoop(problem, proposer, profile, options, config, session.path / ".work", session,
                     retrieve=_retriever(args, problem, profile), on_event=_progress_printer())
    outcome = loop.run(incumbent=incumbent, first_iteration=first, earlier=attempts)
    _tag_best(session, problem.name, outcome.incumbent or incumbent)
    whole = LoopOutcome([*attempts, *outcome.attempts], outcome.baseline_s_raw, outcome.stop_reason)
    _report(args, session, problem, proposer, whole, profile, options.tier or resolve_tier(options, device))
    return 0


def _report(args: argparse.Namespace, session: Any, problem: Any, proposer: Any, outcome: Any, profile: Any,
            tier: str) -> None:
    """Where the session is, model usage, the proposed experience entry, the interpreter caveat."""
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    print(f"session recorded in {session.path} (git log there shows every candidate)")
    usage = getattr(proposer, "usage", None)
    if usage is not None:
        print(f"model usage: {usage.requests} requests, {usage.input_tokens} in / {usage.output_tokens} out tokens "
              f"(cache {usage.cache_write_tokens} written, {usage.cache_read_tokens} read), ${usage.cost_usd:.3f}")
    if not args.no_propose:
        from aka_tui.agent.experience import propose_experience

        proposed = propose_experience(load_kb(default_kb_dir()), problem, outcome, profile, session.path.name, tier)
        if proposed is not None:
            print(f"proposed experience entry {proposed} (review with `aka kb pending` / accept / reject)")
    if not profile.representative:
        print("note: CPU interpreter timings are not representative of any GPU")


def _compile_for(arch: str | None) -> int | None:
    from aka_tui.bench.evaluator.target_compile import parse_arch

    return parse_arch(arch) if arch else None


def register(sub: Any) -> None:
    """`aka optimize`, then the commands on recorded sessions (`aka sessions`, `aka export`, `aka replay`)."""
    from aka_tui.agent.session_commands import register as register_session_commands
    from aka_tui.agent.suite_optimize import add_suite_flags

    p = sub.add_parser("optimize", help="run the agent's measure–revise loop on one problem",
                       description="Baseline, then propose → evaluate → decide for N iterations; every candidate "
                                   "is a commit in a session repository under --sessions.")
    p.add_argument("problem", nargs="?", help="problem name or directory (not needed with --resume)")
    p.add_argument("--proposer", default=DEFAULT_PROPOSER, choices=list(PROPOSER_NAMES))
    p.add_argument("--iterations", type=int_at_least(1),
                   help=f"iterations to run (default {DEFAULT_ITERATIONS}; with --resume: the rest of the recorded "
                        "budget)")
    p.add_argument("--wall-time", type=positive_float,
                   help="wall-time budget of the loop in seconds: an iteration starts only if it is predicted to "
                        "finish in what is left (from the evaluations timed so far, re-measurement included), and "
                        "a re-measurement runs only the rounds that fit")
    p.add_argument("--target", type=positive_float, help="stop when S_op reaches this fraction of the roofline")
    p.add_argument("--compile-for", metavar="ARCH",
                   help="accept only candidates that also compile for this GPU architecture (sm_90, ...): on a "
                        "machine without that GPU, Triton's compiler, which the CPU interpreter skips, checks each "
                        "candidate that would be accepted")
    p.add_argument("--dropout", type=fraction(high_open=True), default=0.5, help="optimization dropout p (default 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--tier", choices=["smoke", "full", "all"])
    p.add_argument("--cases", type=int_at_least(1), default=2)
    p.add_argument("--sessions", default="sessions", help="where session repositories go (default sessions/)")
    p.add_argument("--no-kb", action="store_true", help="skip KB entry retrieval (transfer still uses KB kernels)")
    p.add_argument("--max-tokens", type=int_at_least(1), help="stop once the model has used this many tokens")
    p.add_argument("--max-cost", type=non_negative_float, help="stop once the model has cost this many USD")
    p.add_argument("--no-propose", action="store_true", help="do not propose an experience entry from a win")
    p.add_argument("--best-of", type=int_at_least(1), default=1, metavar="K",
                   help="propose K candidates per step and screen them in parallel, one per GPU (or K CPU "
                        "workers); every one is recorded, the best goes on to the full evaluation")
    p.add_argument("--gpus", type=int_at_least(1), help="with --best-of: use the first N visible GPUs (default: all)")
    p.add_argument("--no-screen", action="store_true",
                   help="evaluate every proposal fully (default: screen on the weighted shapes first, one case, "
                        "no fuzzing; only promising candidates get the full hardened evaluation)")
    p.add_argument("--remeasure-rounds", type=_rounds, metavar="N",
                   help="before accepting a win or a close call (within 10%% of the incumbent), time incumbent and "
                        "candidate alternately N times each and compare medians (default 3; 0: no re-measurement, "
                        "accept on the full evaluation's S_op alone; with --resume: the recorded value)")
    p.add_argument("--model", help="model id for --proposer anthropic (default: $AKA_MODEL or claude-sonnet-5-5)")
    p.add_argument("--from", dest="replay_from", help="with --proposer replay: the recorded session to re-issue")
    p.add_argument("--no-baseline", action="store_true",
                   help="do not time the eager reference first (a fallback, S = 0 either way; saves one full "
                        "evaluation)")
    p.add_argument("--transfer-budget", type=float, default=60.0, metavar="S",
                   help="seconds the search for a knowledge-base kernel that reproduces a new problem may take "
                        "(default 60)")
    add_suite_flags(p)
    p.add_argument("--start", metavar="FILE",
                   help="with the offline proposer: start from this kernel (a candidate file that declares TUNABLES "
                        "and SEARCH_SPACE dict literals) and tune it")
    p.add_argument("--resume", metavar="ID",
                   help="continue a recorded session (a name under --sessions, or a directory) with its recorded "
                        "proposer, seed, dropout, device and tier; uncommitted work of a killed iteration is redone")
    add_sandbox_flags(p)
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="let --proposer anthropic run model-written candidates where no sandbox is available "
                        "(they then see your files, network and environment minus its secrets)")
    p.add_argument("--force", action="store_true",
                   help="with --resume: continue although the problem or the hardware changed, or the session "
                        "looks running by its recorded pid (a session another aka process holds locked is never "
                        "continued)")
    p.set_defaults(func=cmd_optimize)
    register_session_commands(sub)
