"""`aka optimize PROBLEM`: run the measure–revise loop headless, with a progress display."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

from aka_tui.errors import ProposerError


def _retriever(args: argparse.Namespace, problem: Any, profile: Any) -> Callable[[str], tuple[list[str], str]] | None:
    if args.no_kb:
        return None
    try:
        from aka_tui.knowledge.index import KbIndex
        from aka_tui.knowledge.retrieval import KbQuery, render_context, retrieve
        from aka_tui.knowledge.store import default_kb_dir, load_kb

        kb = load_kb(default_kb_dir())
        index = KbIndex(kb.root, on_message=lambda m: print(m, file=sys.stderr))
        index.sync(kb)
    except Exception as exc:  # retrieval is an aid: the loop runs without it, and says so
        print(f"warning: knowledge retrieval unavailable ({type(exc).__name__}: {exc}); continuing without it",
              file=sys.stderr)
        return None

    def ask(text: str) -> tuple[list[str], str]:
        query = KbQuery(text=text, hardware=profile.name, vendor=profile.vendor, arch=profile.arch,
                        family=problem.family, op=problem.name)
        result = retrieve(kb, index, query)
        return result.ids, render_context(result)

    return ask


def cmd_optimize(args: argparse.Namespace) -> int:
    from aka_tui.agent.loop import AgentEvent, AgentLoop, LoopConfig
    from aka_tui.agent.offline import OfflineProposer
    from aka_tui.bench.evaluate import EvalOptions, resolve_device, resolve_profile
    from aka_tui.bench.problem import default_suite_dir, is_problem_dir, load_problem
    from aka_tui.knowledge.reference_kernels import kernels_for_op
    from aka_tui.knowledge.store import default_kb_dir, load_kb
    from aka_tui.record.session_repo import SessionRepo

    directory = Path(args.problem) if is_problem_dir(Path(args.problem)) else default_suite_dir() / args.problem
    problem = load_problem(directory)
    options = EvalOptions(device=args.device, tier=args.tier, cases=args.cases)
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    if args.proposer == "replay":
        from aka_tui.agent.replay import ReplayProposer

        if not args.replay_from:
            raise ProposerError("--proposer replay needs --from SESSION_DIR (a recorded session)")
        proposer: Any = ReplayProposer(Path(args.replay_from), problem.name)
        args.iterations = min(args.iterations, proposer.remaining)
    elif args.proposer == "anthropic":
        from aka_tui.agent.anthropic_proposer import AnthropicProposer, DEFAULT_MODEL
        from aka_tui.agent.brief import problem_brief

        proposer = AnthropicProposer(problem_brief(problem, profile), model=args.model or DEFAULT_MODEL)
    else:
        proposer = OfflineProposer(kernels_for_op(load_kb(default_kb_dir()), problem.name), seed=args.seed)
    name = f"{problem.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    session = SessionRepo.create(Path(args.sessions) / name, {
        "problem": problem.name, "problem_hash": problem.content_hash, "proposer": args.proposer, "seed": args.seed,
        "device": device, "hardware_profile": profile.name, "iterations": args.iterations, "dropout_p": args.dropout})
    started = time.monotonic()

    def show(event: AgentEvent) -> None:
        d = event.data
        elapsed = f"{time.monotonic() - started:7.1f}s"
        if event.kind == "baseline_measured":
            print(f"{elapsed}  baseline (eager reference): S_raw_op {d['s_raw']:.4f} — a fallback, S = 0")
        elif event.kind == "knowledge_retrieved":
            print(f"{elapsed}  iter {d['iteration']}: knowledge: {', '.join(d['ids'][:6])}")
        elif event.kind == "candidate_proposed":
            print(f"{elapsed}  iter {d['iteration']}: {d['rationale']}")
        elif event.kind == "candidate_screened" and not d["promising"]:
            state = ("correct" if d["correct"] else "incorrect") + ("" if d["real"] else ", fallback")
            print(f"{elapsed}  iter {d['iteration']}: screened on the weighted shapes: S_op {d['s_op']:.4f} ({state}) "
                  f"vs incumbent {d['incumbent_s']:.4f}: not worth a full evaluation")
        elif event.kind == "candidate_evaluated" and d.get("screened_out"):
            pass
        elif event.kind == "candidate_evaluated":
            verdict = "ACCEPTED" if d["accepted"] else "rejected"
            state = ("correct" if d["correct"] else "incorrect") + ("" if d["real"] else ", fallback")
            print(f"{elapsed}  iter {d['iteration']}: S_op {d['s_op']:.4f} ({state}) {verdict}")
        elif event.kind == "session_finished":
            print(f"{elapsed}  done: {d['reason']}; best S_op {d['best_s']:.4f} (iteration {d['best_iteration']})")

    config = LoopConfig(iterations=args.iterations, wall_time_s=args.wall_time, target_s=args.target,
                        dropout_p=args.dropout, seed=args.seed, max_tokens=args.max_tokens, max_cost_usd=args.max_cost,
                        screen=not args.no_screen)
    loop = AgentLoop(problem, proposer, profile, options, config, session.path / ".work", session,
                     retrieve=_retriever(args, problem, profile), on_event=show)
    outcome = loop.run()
    best = outcome.incumbent
    if best is not None and best.sha:
        tag = session.tag_accepted(best.sha, f"{problem.name}-best")
        print(f"best kernel: {session.path}/iterations/{best.iteration:04d}/kernel.py (tag {tag})")
    print(f"session recorded in {session.path} (git log there shows every candidate)")
    usage = getattr(proposer, "usage", None)
    if usage is not None:
        print(f"model usage: {usage.requests} requests, {usage.input_tokens} in / {usage.output_tokens} out tokens "
              f"(cache {usage.cache_write_tokens} written, {usage.cache_read_tokens} read), ${usage.cost_usd:.3f}")
    if not args.no_propose:
        from aka_tui.agent.experience import propose_experience

        proposed = propose_experience(load_kb(default_kb_dir()), problem, outcome, profile, name,
                                      options.tier or ("full" if device.startswith("cuda") else "smoke"))
        if proposed is not None:
            print(f"proposed experience entry {proposed} (review with `aka kb pending` / accept / reject)")
    if not profile.representative:
        print("note: CPU interpreter timings are not representative of any GPU")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("optimize", help="run the agent's measure–revise loop on one problem",
                       description="Baseline, then propose → evaluate → decide for N iterations; every candidate "
                                   "is a commit in a session repository under --sessions.")
    p.add_argument("problem", help="problem name or directory")
    p.add_argument("--proposer", default="offline", choices=["offline", "anthropic", "replay"])
    p.add_argument("--iterations", type=int, default=8)
    p.add_argument("--wall-time", type=float, help="stop after this many seconds")
    p.add_argument("--target", type=float, help="stop when S_op reaches this fraction of the roofline")
    p.add_argument("--dropout", type=float, default=0.5, help="optimization dropout p (default 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--tier", choices=["smoke", "full", "all"])
    p.add_argument("--cases", type=int, default=2)
    p.add_argument("--sessions", default="sessions", help="where session repositories go (default sessions/)")
    p.add_argument("--no-kb", action="store_true", help="skip knowledge retrieval")
    p.add_argument("--max-tokens", type=int, help="stop once the model has used this many tokens")
    p.add_argument("--max-cost", type=float, help="stop once the model has cost this many USD")
    p.add_argument("--no-propose", action="store_true", help="do not propose an experience entry from a win")
    p.add_argument("--no-screen", action="store_true",
                   help="evaluate every proposal fully (default: screen on the weighted shapes first, one case, "
                        "no fuzzing; only promising candidates get the full hardened evaluation)")
    p.add_argument("--model", help="model id for --proposer anthropic (default: $AKA_MODEL or claude-sonnet-5-5)")
    p.add_argument("--from", dest="replay_from", help="with --proposer replay: the recorded session to re-issue")
    p.set_defaults(func=cmd_optimize)
