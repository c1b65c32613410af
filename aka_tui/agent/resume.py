"""Continuing a recorded session: checks that it may continue here, and the loop's state rebuilt from commits.

The state of a session is its committed candidates: each commit `iter N: <verdict> ...` holds the kernel,
the evaluator's result and the proposal. The incumbent is the last accepted (or adopted) one, rescored from
its recorded result; every committed attempt is the proposer's memory, as it was before the kill.
"""

from __future__ import annotations

import re
from typing import Any

from aka_tui.agent.attempt import Attempt, first_error
from aka_tui.agent.offline import Proposal
from aka_tui.bench.measure.results import CandidateResult
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.score import score_op
from aka_tui.record.session_repo import SessionError, SessionRepo

ACCEPTED_RE = re.compile(r"^iter \d+: (accepted|adopted)\b")


def check_resumable(meta: dict[str, Any], problem: Problem, profile: HardwareProfile, force: bool) -> list[str]:
    """Refuse (SessionError) when the problem or the hardware changed since the session was recorded, unless
    `force`; returns the differences that `force` let through."""
    differences = []
    recorded_hash = meta.get("problem_hash")
    if recorded_hash and recorded_hash != problem.content_hash:
        differences.append(f"problem {problem.name} changed since the session was recorded "
                           f"(content hash {recorded_hash} then, {problem.content_hash} now)")
    recorded_hw = meta.get("hardware_profile")
    if recorded_hw and recorded_hw != profile.name:
        differences.append(f"the session was recorded on hardware profile {recorded_hw}, this machine is "
                           f"{profile.name}")
    if differences and not force:
        raise SessionError("; ".join(differences) + ": scores would not be comparable (--force continues anyway)")
    return differences


def attempt_from_commit(session: SessionRepo, iteration: int, message: str, sha: str, problem: Problem,
                        profile: HardwareProfile) -> Attempt:
    """One committed candidate as the loop's Attempt, scored from its recorded result."""
    files = session.iteration_files(iteration)
    recorded = files["proposal"]
    try:
        result = CandidateResult.from_json(files["result"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SessionError(f"iteration {iteration}: the recorded result is unreadable ({exc})") from None
    changed = {k: tuple(v) for k, v in dict(recorded.get("changed") or {}).items()}
    proposal = Proposal(files["kernel"], str(recorded.get("kernel_id") or recorded.get("proposer") or "recorded"),
                        dict(recorded.get("point") or {}), changed, str(recorded.get("rationale", "")),
                        path=str(recorded.get("path") or ""))
    return Attempt(iteration, proposal, score_op(problem, result, profile), bool(ACCEPTED_RE.match(message)),
                   sha, first_error(result))


def rebuild_attempts(session: SessionRepo, problem: Problem, profile: HardwareProfile) -> list[Attempt]:
    """Every committed candidate of the session, in iteration order."""
    return [attempt_from_commit(session, c.iteration, c.message, c.sha, problem, profile)
            for c in session.candidates()]


def missing_evaluated_events(session: SessionRepo, attempts: list[Attempt]) -> list[Attempt]:
    """Committed attempts whose `candidate_evaluated` event was lost (killed between commit and event)."""
    from aka_tui.record.history import facts_from_events

    facts, _problems = facts_from_events(session.path)
    return [a for a in attempts if a.iteration not in facts or facts[a.iteration].correct is None]


def adopt_persons_incumbent(proposer: Any, incumbent: Attempt | None) -> None:
    """A resumed session whose incumbent is a person's adopted edit goes on tuning that edit (as the live session
    did after adopting it), where the proposer can (`adopt`) and the edit declares its tunables."""
    adopt = getattr(proposer, "adopt", None)
    path = incumbent.proposal.path if incumbent is not None else ""
    if adopt is not None and incumbent is not None and path.startswith("person "):
        adopt(incumbent.proposal.source, path.removeprefix("person "))


def adopt_edit(proposer: Any, source: str, author: str, point: dict[str, Any],
               adopted: bool) -> tuple[dict[str, Any], bool | None]:
    """(the edit's point, whether the proposer tunes it from now on) for a person's edit the loop evaluated: an
    adopted edit that declares its tunables is what a proposer with `adopt` tunes next, at the edit's TUNABLES;
    None when the question does not arise (not adopted, or a proposer that takes no kernel)."""
    adopt = getattr(proposer, "adopt", None)
    if not adopted or adopt is None:
        return dict(point), None
    edited = adopt(source, author)
    return (dict(point), False) if edited is None else (edited, True)
