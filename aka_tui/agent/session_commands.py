"""`aka sessions`, `aka export ID`, `aka replay ID [--rerun]`: recorded sessions from the command line.

They read a session's files (not its git history), so the shipped examples under `sessions/examples/`
(no `.git`, a `history.bundle`) work offline. Only `--rerun` evaluates anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aka_tui import __version__
from aka_tui.argtypes import int_at_least


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts)) if ts else "-"


def _s(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def _problem_of(meta: dict[str, Any], session_name: str) -> Any:
    """The recorded session's problem, from its recorded directory or the shipped suite."""
    from aka_tui.bench.problem.lookup import find_problem

    return find_problem(str(meta.get("problem", "")), recorded=[meta.get("problem_dir")])


def cmd_sessions_score(args: argparse.Namespace) -> int:
    from aka_tui.agent.suite_score import OUTCOME_HEADERS, outcome_rows, score_sessions
    from aka_tui.bench.problem.lookup import load_suite
    from aka_tui.bench.scoring.report import aggregate_lines, text_table, write_reports

    sessions_dir = Path(args.sessions)
    if not sessions_dir.is_dir():
        print(f"error: no sessions directory {sessions_dir} (give --sessions DIR)", file=sys.stderr)
        return 2
    from aka_tui.bench.problem.lookup import default_suite_dir

    suite = load_suite(Path(args.suite) if args.suite else default_suite_dir())
    ops = [o.strip() for o in args.ops.split(",") if o.strip()] if args.ops else None
    if args.problem:
        ops = [args.problem]
    report, outcomes, warnings = score_sessions(sessions_dir, suite, args.tier, ops)
    print(f"{report.label}: the newest session's incumbent per problem, scored with {suite.directory}'s weights "
          f"(profile {report.hardware.name}, tier {report.tier}; nothing re-run)")
    print(text_table(outcome_rows(report, outcomes), OUTCOME_HEADERS))
    for line in aggregate_lines(report.aggregate)[:2]:
        print(line)
    for warning in warnings:
        print(f"warning: {warning}")
    if args.out:
        json_path, md_path = write_reports(report, Path(args.out), args.name)
        print(f"wrote {json_path} and {md_path}")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    if args.score:
        return cmd_sessions_score(args)
    from aka_tui.bench.scoring.report import text_table
    from aka_tui.record.listing import list_sessions, session_dirs

    sessions = [s for s in list_sessions(session_dirs(Path(args.sessions)))
                if not args.problem or s.problem == args.problem]
    rows = [[s.path.name, s.problem, s.proposer, s.hardware, str(s.iterations),
             (_s(s.best_s) + ("" if s.best_real else " (no real kernel)")) if s.best_s is not None else "-",
             ", ".join(s.tags) or "-", _when(s.started),
             ("finished" if s.finished else "unfinished") + (", example" if s.example else "")]
            for s in sessions]
    print(text_table(rows, ["id", "problem", "proposer", "hardware", "iters", "best S_op", "accepted tag", "started",
                            "state"]))
    where = f"{args.sessions}" + (f" (problem {args.problem})" if args.problem else "")
    print(f"{len(rows)} sessions in {where} and the shipped examples; "
          "`aka replay ID`, `aka export ID`, `aka optimize --resume ID`")
    return 0


def export_text(session_name: str, meta: dict[str, Any], step: Any) -> str:
    """The exported candidate: a provenance header, then the recorded kernel unchanged."""
    from aka_tui.record.session_repo import SessionError

    try:
        source = step.kernel_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionError(f"iteration {step.iteration} of {session_name}: kernel.py is unreadable ({exc})") from None
    if "class Model" not in source:
        raise SessionError(f"iteration {step.iteration} of {session_name} has no `class Model`: not a candidate file")
    provenance = step.result().get("provenance") or {}
    facts = step.facts
    state = "correct" if facts.correct else "incorrect" if facts.correct is not None else "verdict not recorded"
    state += ", real" if facts.real else ", fallback" if facts.real is not None else ""
    header = [
        f"# aka-tui candidate for problem {meta.get('problem')}: class Model takes the reference's init and forward",
        "# arguments (Atrex-Bench style); evaluate with `aka eval THIS_FILE --problem "
        f"{meta.get('problem')}`.",
        f"# From session {session_name}, iteration {step.iteration} ({step.verdict}"
        + (f", tag {', '.join(facts.tags)}" if facts.tags else "") + ")"
        + (f", commit {facts.sha[:10]}" if facts.sha else "") + ".",
        f"# Recorded S_op {_s(facts.s_op)} ({state}) on hardware profile {meta.get('hardware_profile', '?')} "
        f"({provenance.get('device_name', meta.get('device', '?'))}, {provenance.get('tier', '?')} tier), "
        f"recorded {_when(provenance.get('started_unix'))}.",
        f"# Problem hash {meta.get('problem_hash', '?')}; exported {_when(time.time())} by aka-tui {__version__}.",
    ]
    return "\n".join(header) + "\n" + source


def _load_session(args: argparse.Namespace) -> tuple[Path, dict[str, Any], list[Any]]:
    """Session ID's directory, metadata and recorded steps; unreadable parts are warned about, not fatal."""
    from aka_tui.record.history import read_steps
    from aka_tui.record.listing import resolve_session
    from aka_tui.record.session_repo import read_meta

    path = resolve_session(args.id, Path(args.sessions))
    meta = read_meta(path)
    steps, problems = read_steps(path)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    return path, meta, steps


def cmd_export(args: argparse.Namespace) -> int:
    from aka_tui.record.history import exported_step
    from aka_tui.record.session_repo import SessionError

    path, meta, steps = _load_session(args)
    if not steps:
        raise SessionError(f"session {path.name} has no recorded candidates")
    step = exported_step(steps, args.iteration)
    default = f"{meta.get('problem', 'candidate')}_{path.name}_iter{step.iteration:04d}.py"
    out = Path(args.out or default)
    text = export_text(path.name, meta, step)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    except OSError as exc:
        raise SessionError(f"cannot write {out}: {exc}") from None
    print(f"wrote {out}: iteration {step.iteration} of {path.name} ({step.verdict}, S_op {_s(step.facts.s_op)})")
    return 0


def _remeasure_lines(record: Any) -> list[str]:
    """The re-measurement of a win or close call as recorded in proposal.json (older sessions have none)."""
    if not isinstance(record, dict):
        return []
    line = f"    re-measured: {record.get('rounds')} of {record.get('rounds_planned')} rounds"
    samples = record.get("samples") or {}
    if samples.get("candidate"):
        line += (f", S_op incumbent {', '.join(_s(v) for v in samples.get('incumbent', []))}; "
                 f"candidate {', '.join(_s(v) for v in samples['candidate'])}")
    return [line + (f" ({record['reason']})" if record.get("reason") else "")]


def _replay_text(path: Path, meta: dict[str, Any], steps: list[Any]) -> list[str]:
    """The session step by step, as recorded."""
    from aka_tui.record.events import read_events

    events, _problems = read_events(path / "events.jsonl")
    resumed = {int(e.data.get("from_iteration", 0)): e for e in events if e.kind == "session_resumed"}
    lines = [f"session {path.name}: {meta.get('problem')} with the {meta.get('proposer')} proposer, seed "
             f"{meta.get('seed')}, dropout p {meta.get('dropout_p')}, on {meta.get('hardware_profile')} "
             f"({meta.get('device')}); {len(steps)} recorded iterations"]
    for step in steps:
        if step.iteration in resumed:
            discarded = resumed[step.iteration].data.get("discarded") or []
            lines.append(f"  -- resumed at iteration {step.iteration}"
                         + (f" (discarded uncommitted {', '.join(discarded)})" if discarded else ""))
        f = step.facts
        state = ("correct" if f.correct else "incorrect") if f.correct is not None else "not recorded"
        state += "" if f.real is None else (", real" if f.real else ", fallback")
        changed = ", ".join(f"{k} {v[0]!r} → {v[1]!r}" for k, v in (step.proposal.get("changed") or {}).items()
                            if isinstance(v, (list, tuple)) and len(v) == 2)
        masks = step.dropout
        lines += [
            f"iter {step.iteration}  {step.author}  {step.verdict.upper() if f.accepted else step.verdict}  "
            f"S_op {_s(f.s_op)} ({state})  accepted: {'yes' if f.accepted else 'no'}"
            + (f"  tag {', '.join(f.tags)}" if f.tags else ""),
            f"    path: {step.proposal.get('path') or step.proposal.get('proposer') or '-'}",
            f"    rationale: {step.rationale or '-'}",
            *([f"    changed: {changed}"] if changed else []),
            f"    dropout: masked iterations {masks['masked_iterations'] or 'none'}; "
            f"masked tactics {', '.join(masks['masked_tactics']) or 'none'}",
            f"    screened out: {'yes' if step.screened_out else 'no'}",
            *_remeasure_lines(step.proposal.get("remeasure")),
        ]
    for e in events:
        if e.kind == "session_finished":
            lines.append(f"finished: {e.data.get('reason')}; best S_op {_s(e.data.get('best_s'))} "
                         f"(iteration {e.data.get('best_iteration')})")
    return lines


def _rerun(args: argparse.Namespace, path: Path, meta: dict[str, Any], steps: list[Any]) -> list[list[str]]:
    """Evaluate every recorded candidate on this machine; rows of recorded vs now."""
    import shutil

    from aka_tui.bench.evaluator.evaluate import (
        CandidateSpec,
        EvalOptions,
        evaluate_candidate,
        resolve_device,
        resolve_profile,
        resolve_tier,
    )
    from aka_tui.bench.scoring.score import score_op

    problem = _problem_of(meta, path.name)
    options = EvalOptions(device=args.device, tier=args.tier, cases=args.cases, fuzz=args.fuzz)
    device = resolve_device(options.device)
    profile = resolve_profile(options, device)
    print(f"re-evaluating {len(steps)} candidates on {device} (profile {profile.name}, "
          f"{resolve_tier(options, device)} tier); recorded on {meta.get('hardware_profile')}")
    if meta.get("problem_hash") and meta["problem_hash"] != problem.content_hash:
        print(f"note: problem {problem.name} changed since the session was recorded (hash {meta['problem_hash']} "
              f"then, {problem.content_hash} now)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="aka-rerun-") as scratch:
        for step in steps:
            candidate = Path(scratch) / f"iter_{step.iteration:04d}.py"
            shutil.copyfile(step.kernel_path, candidate)
            score = score_op(problem, evaluate_candidate(problem, CandidateSpec.file(candidate), options), profile)
            f = step.facts
            recorded = ("correct" if f.correct else "incorrect") if f.correct is not None else "-"
            recorded += "" if f.real is None or not f.correct else (", real" if f.real else ", fallback")
            now = ("correct" + (", real" if score.real else ", fallback")) if score.correct else "incorrect"
            rows.append([str(step.iteration), step.verdict, recorded, _s(f.s_op), now, _s(score.s_op)])
            print(f"  iter {step.iteration}: recorded {recorded} S_op {_s(f.s_op)} | now {now} S_op {_s(score.s_op)}",
                  file=sys.stderr)
    return rows


def cmd_replay(args: argparse.Namespace) -> int:
    from aka_tui.bench.scoring.report import text_table

    path, meta, steps = _load_session(args)
    if not args.rerun:
        print("\n".join(_replay_text(path, meta, steps)))
        return 0
    rows = _rerun(args, path, meta, steps)
    print(text_table(rows, ["iter", "recorded verdict", "recorded", "recorded S_op", "now", "now S_op"]))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("sessions", help="list recorded agent sessions (yours and the shipped examples)",
                       description="A table of the sessions under --sessions and the shipped examples: problem, "
                                   "proposer, hardware, iterations, best S_op, accepted tag, start time.")
    p.add_argument("--sessions", default="sessions", help="where session repositories are (default sessions/)")
    p.add_argument("--problem", help="only sessions of this problem")
    p.add_argument("--score", action="store_true",
                   help="score the newest session's incumbent of every problem as one suite run (S before and "
                        "after, own_share, iterations, S_agg with the suite's weights; nothing re-run)")
    p.add_argument("--suite", help="with --score: the suite whose weights score the sessions (default: the shipped problems/)")
    p.add_argument("--ops", help="with --score: comma-separated subset of problems")
    p.add_argument("--tier", default="full", choices=["smoke", "full", "all"],
                   help="with --score: the tier the sessions ran (default full)")
    p.add_argument("--out", help="with --score: also write JSON and Markdown reports here")
    p.add_argument("--name", default="sessions-score", help="with --score: report file stem")
    p.set_defaults(func=cmd_sessions)

    p = sub.add_parser("export", help="write a session's accepted kernel as a candidate file",
                       description="Write the accepted kernel of session ID (the latest tagged one, else the best "
                                   "correct and real one) as a self-contained candidate file (class Model) with a "
                                   "provenance header; `aka eval FILE --problem OP` evaluates it.")
    p.add_argument("id", help="session id (see `aka sessions`) or directory")
    p.add_argument("--out", help="file to write (default <op>_<session>_iterNNNN.py here)")
    p.add_argument("--iteration", type=int_at_least(1), help="export this iteration instead")
    p.add_argument("--sessions", default="sessions", help="where session repositories are (default sessions/)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("replay", help="print a recorded session step by step, or re-evaluate it here",
                       description="Print each iteration of session ID as recorded (author, rationale, verdict, "
                                   "S_op, accepted, dropout masks, screening). --rerun evaluates every recorded "
                                   "candidate on this machine and prints recorded vs now.")
    p.add_argument("id", help="session id (see `aka sessions`) or directory")
    p.add_argument("--rerun", action="store_true", help="re-evaluate each recorded candidate on this machine")
    p.add_argument("--sessions", default="sessions", help="where session repositories are (default sessions/)")
    p.add_argument("--device", default="auto", help="with --rerun: cpu, cuda or cuda:N (default: cuda if available)")
    p.add_argument("--tier", choices=["smoke", "full", "all"], help="with --rerun: shape tier (default: smoke on CPU)")
    p.add_argument("--cases", type=int_at_least(1), default=2, help="with --rerun: correctness cases per shape (default 2)")
    p.add_argument("--fuzz", type=int_at_least(0), help="with --rerun: fuzzed shapes per candidate (default: the evaluator's)")
    p.set_defaults(func=cmd_replay)
