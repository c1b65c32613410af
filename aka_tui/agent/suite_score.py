"""The suite score of what `aka optimize` sessions produced: each problem's incumbent, scored as a bench run.

`aka sessions --score` answers "what S_agg did the agent reach?" from recorded sessions alone (nothing is
re-run): per problem the newest session is taken, and its incumbent is the last candidate the loop
accepted, whether or not the session finished (a session killed mid-iteration keeps its incumbent, as
`--resume` would). Each incumbent's recorded result is scored with the suite's current weights against the
profile of the GPU that measured it, exactly as `aka bench` scores a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aka_tui.bench.measure.results import CandidateResult, ShapeResult, StageError
from aka_tui.bench.problem.model import Suite
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.bench_report import BenchReport, launch_floor_s
from aka_tui.bench.scoring.score import aggregate, score_op
from aka_tui.record.events import read_events
from aka_tui.record.history import RecordedStep, read_steps
from aka_tui.record.listing import list_sessions
from aka_tui.record.session_repo import SessionError


@dataclass(frozen=True)
class SessionOutcome:
    """What one session did, beside its incumbent's score."""

    problem: str
    session: str
    baseline_s_raw: float | None  # the eager reference as the session measured it (a fallback: S = 0)
    iterations: int  # candidates recorded
    accepted_iteration: int | None
    min_own_share: float | None  # over the incumbent's timed shapes (GPU attribution)
    wall_s: float  # first to last event
    finished: bool


def incumbent_step(steps: list[RecordedStep]) -> RecordedStep | None:
    accepted = [s for s in steps if s.facts.accepted]
    return accepted[-1] if accepted else None


def _min_own_share(result: CandidateResult) -> float | None:
    shares = [s.audit.own_share for s in result.shapes if s.audit is not None and s.audit.own_share is not None]
    return min(shares) if shares else None


def _no_session(problem: str, shape_ids: list[str], why: str) -> CandidateResult:
    error = StageError("compile", "no_candidate", why)
    return CandidateResult(problem, "none", False, [ShapeResult(s, "no_candidate", [], error) for s in shape_ids],
                           {}, error)


def score_sessions(sessions_dir: Path, suite: Suite, tier: str = "full",
                   ops: list[str] | None = None) -> tuple[BenchReport, list[SessionOutcome], list[str]]:
    """A BenchReport of the newest session's incumbent per problem, the session facts, and warnings."""
    sessions = [s for s in list_sessions([(sessions_dir, False)]) if not s.example]
    newest: dict[str, Path] = {}
    finished: dict[str, bool] = {}
    for summary in sessions:  # newest first
        if summary.problem not in newest:
            newest[summary.problem] = summary.path
            finished[summary.problem] = summary.finished
    wanted = ops or list(suite.problems)
    unknown = [o for o in wanted if o not in suite.problems]
    if unknown:
        raise SessionError(f"unknown problem(s) {', '.join(unknown)}; known: {', '.join(suite.problems)}")
    warnings: list[str] = []
    results: list[CandidateResult] = []
    outcomes: list[SessionOutcome] = []
    profiles: dict[str, object] = {}
    for name in wanted:
        problem = suite.problems[name]
        shape_ids = [s.shape_id for s in problem.shapes_for(tier)]
        path = newest.get(name)
        if path is None:
            results.append(_no_session(name, shape_ids, f"no session of {name} under {sessions_dir}"))
            continue
        steps, problems = read_steps(path)
        warnings += [f"{path.name}: {p}" for p in problems]
        events, _ = read_events(path / "events.jsonl")
        baseline = next((e.data.get("s_raw") for e in events if e.kind == "baseline_measured"), None)
        step = incumbent_step(steps)
        if step is None:
            results.append(_no_session(name, shape_ids, f"{path.name} accepted no candidate"))
        else:
            result = CandidateResult.from_json(step.result())
            recorded_hash = result.provenance.get("problem_hash")
            if recorded_hash and recorded_hash != problem.content_hash:
                warnings.append(f"{path.name}: the problem changed since the session ran (hash {recorded_hash} "
                                f"→ {problem.content_hash}); its times are scored with today's weights")
            results.append(result)
        outcomes.append(SessionOutcome(
            name, path.name, float(baseline) if baseline is not None else None, len(steps),
            step.iteration if step else None, _min_own_share(results[-1]) if step else None,
            round(events[-1].ts - events[0].ts, 1) if events else 0.0, finished[name]))
    for result in results:
        profile_name = str(result.provenance.get("hardware_profile") or "")
        if profile_name and profile_name not in profiles:
            profiles[profile_name] = get_profile(profile_name)
    if len(profiles) > 1:
        warnings.append(f"sessions measured on several GPU models ({', '.join(profiles)}); each op is scored "
                        "against its own GPU's profile, so S_agg mixes them")
    headline = next(iter(profiles.values())) if profiles else get_profile("cpu")

    def profile_of(result: CandidateResult):  # type: ignore[no-untyped-def]
        name = str(result.provenance.get("hardware_profile") or "")
        return profiles.get(name, headline)

    scores = [score_op(suite.problems[r.problem], r, profile_of(r), launch_floor_s(profile_of(r)))
              for r in results]
    devices = sorted({str(r.provenance.get("device_name") or r.provenance.get("device")) for r in results
                      if r.provenance})
    report = BenchReport(f"sessions:{sessions_dir}", str(suite.directory), ", ".join(devices) or "-", tier,
                         headline, results, scores, aggregate(scores),  # type: ignore[arg-type]
                         round(sum(o.wall_s for o in outcomes), 1), mixed_hardware=sorted(profiles)
                         if len(profiles) > 1 else [])
    return report, outcomes, warnings


def outcome_rows(report: BenchReport, outcomes: list[SessionOutcome]) -> list[list[str]]:
    """One row per problem: weight, S before (the fallback's S_raw) and after, own_share, iterations."""
    by_problem = {o.problem: o for o in outcomes}
    rows = []
    for op in report.ops:
        o = by_problem.get(op.problem)

        def f(v: float | None, d: int = 3) -> str:
            return "-" if v is None else f"{v:.{d}f}"
        rows.append([op.problem, f"{op.weight * 100:.1f}", f(o.baseline_s_raw if o else None), f(op.s_op),
                     "real" if op.real else ("fallback" if op.correct else "-"),
                     f(o.min_own_share if o else None, 2),
                     f"{o.accepted_iteration}/{o.iterations}" if o and o.accepted_iteration else
                     (f"-/{o.iterations}" if o else "-"),
                     f"{o.wall_s:.0f}" if o else "-", ("finished" if o.finished else "stopped") if o else "no session"])
    return rows


OUTCOME_HEADERS = ["op", "w%", "before S_raw (eager)", "after S_op", "kernel", "min own_share",
                   "accepted iter/recorded", "wall s", "session"]

