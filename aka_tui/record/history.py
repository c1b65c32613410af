"""A session's iterations as recorded: the files under `iterations/` joined with what the event log says.

Reads files only (no git), so it works on shipped examples; the Replay screen, `aka replay` and
`aka export` are built on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.record.events import read_events
from aka_tui.record.session_repo import SessionError


@dataclass(frozen=True)
class IterationFacts:
    """What the events say about an iteration (accepted, author, tags, and the scores the loop saw)."""

    accepted: bool = False
    author: str = "aka agent"
    sha: str | None = None
    tags: tuple[str, ...] = ()
    s_op: float | None = None
    correct: bool | None = None
    real: bool | None = None
    screened_out: bool = False


def facts_from_events(session_dir: Path) -> tuple[dict[int, IterationFacts], list[str]]:
    """Per iteration: accepted/adopted, author, accepted-tags and scores, from events.jsonl (problems reported).

    Later events of an iteration replace earlier ones (a resumed session redoes an iteration it lost)."""
    events, problems = read_events(session_dir / "events.jsonl")
    raw: dict[int, dict[str, Any]] = {}
    tags_by_sha: dict[str, list[str]] = {}
    for e in events:
        try:
            if e.kind == "candidate_recorded":
                raw.setdefault(int(e.data["iteration"]), {})["author"] = str(e.data.get("author", "aka agent"))
            elif e.kind == "candidate_evaluated":
                item = raw.setdefault(int(e.data["iteration"]), {})
                item.update(accepted=bool(e.data.get("accepted")), sha=e.data.get("sha"),
                            s_op=float(e.data["s_op"]) if e.data.get("s_op") is not None else None,
                            correct=e.data.get("correct"), real=e.data.get("real"),
                            screened_out=bool(e.data.get("screened_out")))
            elif e.kind == "candidate_accepted":
                tags_by_sha.setdefault(str(e.data.get("sha")), []).append(str(e.data.get("tag")))
        except (KeyError, TypeError, ValueError):
            problems.append(f"event {e.seq} ({e.kind}) is malformed and was skipped")
    facts = {i: IterationFacts(bool(d.get("accepted")), d.get("author", "aka agent"), d.get("sha"),
                               tuple(tags_by_sha.get(str(d.get("sha")), [])), d.get("s_op"), d.get("correct"),
                               d.get("real"), bool(d.get("screened_out")))
             for i, d in raw.items()}
    return facts, problems


def recorded_iterations(session_dir: Path) -> list[int]:
    """Iteration numbers with a result file under `iterations/`."""
    folder = session_dir / "iterations"
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and (p / "result.json").is_file())


@dataclass(frozen=True)
class RecordedStep:
    """One recorded iteration: its files and what the loop decided."""

    iteration: int
    folder: Path
    facts: IterationFacts
    proposal: dict[str, Any] = field(default_factory=dict)

    @property
    def author(self) -> str:
        return str(self.proposal.get("author") or self.facts.author)

    @property
    def rationale(self) -> str:
        return str(self.proposal.get("rationale", ""))

    @property
    def screened_out(self) -> bool:
        return bool(self.proposal.get("screened_out", self.facts.screened_out))

    @property
    def dropout(self) -> dict[str, list[Any]]:
        masks = self.proposal.get("dropout") or {}
        return {"masked_iterations": list(masks.get("masked_iterations", [])),
                "masked_tactics": list(masks.get("masked_tactics", []))}

    @property
    def kernel_path(self) -> Path:
        return self.folder / "kernel.py"

    @property
    def verdict(self) -> str:
        f = self.facts
        if f.accepted:
            return "adopted" if self.author not in ("", "aka agent") else "accepted"
        if f.correct is None:
            return "unknown"
        if not f.correct:
            return "incorrect"
        if not f.real:
            return "fallback"
        return "screened out" if self.screened_out else "rejected"

    def result(self) -> dict[str, Any]:
        try:
            data = json.loads((self.folder / "result.json").read_text())
        except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
            raise SessionError(f"{self.folder / 'result.json'} is unreadable ({exc})") from None
        if not isinstance(data, dict):
            raise SessionError(f"{self.folder / 'result.json'} is not a JSON object")
        return data


def read_steps(session_dir: Path) -> tuple[list[RecordedStep], list[str]]:
    """Every recorded iteration in order, plus problems met while reading (never fatal)."""
    facts, problems = facts_from_events(session_dir)
    steps = []
    for iteration in recorded_iterations(session_dir):
        folder = session_dir / "iterations" / f"{iteration:04d}"
        try:
            proposal = json.loads((folder / "proposal.json").read_text())
        except (OSError, ValueError) as exc:  # ValueError: damaged JSON, or bytes that are not UTF-8
            problems.append(f"iteration {iteration}: unreadable proposal ({type(exc).__name__}: {exc})")
            proposal = {}
        steps.append(RecordedStep(iteration, folder, facts.get(iteration, IterationFacts()),
                                  proposal if isinstance(proposal, dict) else {}))
    return steps, problems


def exported_step(steps: list[RecordedStep], iteration: int | None = None) -> RecordedStep:
    """The step `aka export` writes: `iteration` if given, else the latest tagged one, else the best
    correct and real (fully evaluated) one."""
    if iteration is not None:
        for step in steps:
            if step.iteration == iteration:
                return step
        raise SessionError(f"no recorded iteration {iteration} (recorded: {[s.iteration for s in steps]})")
    tagged = [s for s in steps if s.facts.tags]
    if tagged:
        return tagged[-1]
    good = [s for s in steps if s.facts.correct and s.facts.real and not s.screened_out and s.facts.s_op is not None]
    if not good:
        raise SessionError("the session has no correct, real candidate to export (choose one with --iteration N)")
    return max(good, key=lambda s: (s.facts.s_op or 0.0, s.iteration))
