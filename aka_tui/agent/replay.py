"""The replay proposer: re-issues a recorded session's candidates, in order, for re-evaluation here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka_tui.agent.offline import Proposal
from aka_tui.errors import ProposerError
from aka_tui.record.session_repo import SessionRepo


class ReplayProposer:
    """Proposes iteration 1, 2, … of a recorded session, with their recorded rationale."""

    name = "replay"

    def __init__(self, session_path: Path, problem: str) -> None:
        self.session = SessionRepo.open(session_path)
        recorded = self.session.meta.get("problem")
        if recorded != problem:
            raise ProposerError(f"session {session_path.name} optimised {recorded!r}, not {problem!r}")
        self.iterations = [c.iteration for c in self.session.candidates()]
        if not self.iterations:
            raise ProposerError(f"session {session_path.name} has no recorded candidates to replay")
        self.position = 0

    def tactics(self) -> list[str]:
        return []

    def _next(self) -> Proposal:
        if self.position >= len(self.iterations):
            raise ProposerError("the recorded session has no more candidates")
        iteration = self.iterations[self.position]
        self.position += 1
        files = self.session.iteration_files(iteration)
        proposal = files["proposal"]
        return Proposal(files["kernel"], f"replay:{self.session.path.name}:{iteration}",
                        dict(proposal.get("point", {})), {},
                        f"replay of iteration {iteration}: {proposal.get('rationale', '')}",
                        path=str(proposal.get("path") or f"replay of {self.session.path.name}"))

    def first(self) -> Proposal:
        return self._next()

    def propose(self, incumbent: dict[str, Any], remembered: list[dict[str, Any]], bottleneck: str | None,
                tactics_in_play: list[str]) -> Proposal:
        return self._next()

    @property
    def remaining(self) -> int:
        return len(self.iterations) - self.position
