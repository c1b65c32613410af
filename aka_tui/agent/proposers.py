"""The proposers: what one is (`Proposer`), their names, the default model and the one factory the CLI and the TUI use."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeGuard

from aka_tui.errors import ProposerError

if TYPE_CHECKING:
    from aka_tui.agent.offline import Proposal

PROPOSER_NAMES = ("offline", "anthropic", "replay")
DEFAULT_PROPOSER = "offline"
DEFAULT_MODEL = "claude-sonnet-5-5"


class Proposer(Protocol):
    """What the agent loop asks of a proposer. One that also takes the loop's context is a `ContextProposer`."""

    name: str

    def tactics(self) -> list[str]:
        """The tactics this proposer can vary (dropout picks among them)."""
        ...

    def first(self) -> Proposal:
        """The first candidate of a session."""
        ...

    def propose(self, incumbent: dict[str, Any], remembered: list[dict[str, Any]], bottleneck: str | None,
                tactics_in_play: list[str]) -> Proposal:
        """One step from the incumbent's point, avoiding the remembered ones."""
        ...


class ContextProposer(Proposer, Protocol):
    """A proposer with `wants_context = True`: `first` and `propose` also take `context` (the incumbent's source
    and measurements, retrieved knowledge, the last error)."""

    wants_context: bool

    def first(self, context: dict[str, Any] | None = None) -> Proposal:
        """The first candidate of a session, given the context."""
        ...

    def propose(self, incumbent: dict[str, Any], remembered: list[dict[str, Any]], bottleneck: str | None,
                tactics_in_play: list[str], context: dict[str, Any] | None = None) -> Proposal:
        """One step from the incumbent's point, avoiding the remembered ones, given the context."""
        ...


def wants_context(proposer: Proposer) -> TypeGuard[ContextProposer]:
    """Whether the loop passes `proposer` its context (`wants_context = True`)."""
    return bool(getattr(proposer, "wants_context", False))


@dataclass
class ProposerRequest:
    """Everything a proposer may be built from; the front end fills what it has."""

    kind: str
    problem: Any
    profile: Any
    seed: int = 0
    model: str | None = None
    replay_from: str | Path | None = None
    replay_missing: str = "the replay proposer needs a recorded session (--from SESSION_DIR)"
    """The one line shown when `replay_from` is missing (each front end says where to give it)."""
    done: int = 0
    """Recorded iterations a replay proposer skips (a resumed session)."""
    device: str = "cpu"
    tier: str | None = None
    start: str | None = None
    """A person's kernel file to start from (offline)."""
    start_text: str | None = None
    """A person's kernel written in the app to start from (offline)."""
    transfer_budget_s: float = 60.0
    iterations: int | None = None
    """The session's iteration budget, where known: with one, the offline proposer starts at a kernel's accuracy
    steps."""
    log: Callable[[str], None] = field(default=lambda message: None)


def make_proposer(request: ProposerRequest) -> Proposer:
    """The proposer `request.kind` names; a bad request raises ProposerError with one line."""
    if request.kind not in PROPOSER_NAMES:
        raise ProposerError(f"unknown proposer {request.kind!r}: choose one of {', '.join(PROPOSER_NAMES)}")
    if request.kind == "replay":
        return _replay(request)
    if request.kind == "anthropic":
        return _anthropic(request)
    return _offline(request)


def _replay(request: ProposerRequest) -> Proposer:
    from aka_tui.agent.replay import ReplayProposer

    if not request.replay_from:
        raise ProposerError(request.replay_missing)
    proposer = ReplayProposer(Path(request.replay_from), request.problem.name)
    proposer.position = min(request.done, len(proposer.iterations))
    return proposer


def _anthropic(request: ProposerRequest) -> Proposer:
    """The model, briefed with the problem and the closest knowledge-base kernel as an example."""
    from aka_tui.agent.anthropic_proposer import AnthropicProposer
    from aka_tui.agent.brief import closest_kernel, example_section, problem_brief
    from aka_tui.knowledge.reference_kernels import reference_kernels
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    brief = problem_brief(request.problem, request.profile) + example_section(
        request.problem, closest_kernel(request.problem, reference_kernels(load_kb(default_kb_dir()))))
    return AnthropicProposer(brief, model=request.model or DEFAULT_MODEL)


def _offline(request: ProposerRequest) -> Proposer:
    from aka_tui.agent.offline import OfflineProposer
    from aka_tui.agent.starting_point import find_starting_point

    point = find_starting_point(request.problem, request.device, request.tier,
                                start_file=Path(request.start) if request.start else None, log=request.log,
                                transfer_budget_s=request.transfer_budget_s, start_text=request.start_text)
    request.log(f"starting point: {point.detail}")
    return OfflineProposer([point.kernel], seed=request.seed, path=_path_label(point),
                           interpreter=request.device == "cpu", single_shot=request.iterations == 1)


def _path_label(point: Any) -> str:
    """What the session records as the path of each offline iteration."""
    return {"kb": f"kb {point.kernel.entry_id}", "transfer": point.detail,
            "compiler-seed": "compiler seed (inductor)", "person": point.detail}.get(point.path, point.detail)
