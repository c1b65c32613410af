"""The offline proposer: no model, no key. It instantiates the knowledge base's reference kernel for the
problem and searches its tunables, one neighbourhood step at a time, steered by the measured bottleneck.

Tunables are grouped into tactics by name (tile sizes, work per program, warps, pipeline stages, split,
swizzle, algorithm flags); the bottleneck orders which tactic to change first, optimization dropout masks
some tactics each step, and points already in (unmasked) memory are not proposed again. Tunables the kernel
declares inert at the incumbent (its INERT rules) are not proposed, and points differing only in inert
tunables count as the same point. When every live neighbour is spent and a tactic in play is inert only
because of a switch (a kernel's AUTO, a one-pass flag), the next step turns the switch so that the tactic's
tunable reaches the launch, before any random restart.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.errors import KbEntryError, ProposerError
from aka_tui.knowledge.reference_kernels import ReferenceKernel, kernel_from_source

TACTIC_PATTERNS = (
    ("work-per-program", re.compile(r"^(ROWS|TOKENS|TILES)_PER_PROGRAM$|^(ROW|T)_TILES$")),
    ("split", re.compile(r"^SPLIT_(K|KV)$|^PARTITION$")),
    ("swizzle", re.compile(r"^GROUP_M$")),
    ("warps", re.compile(r"^(k\d+_)?num_warps$")),
    ("stages", re.compile(r"^(k\d+_)?num_stages$")),
    ("tile", re.compile(r"^(BLOCK|DOWN_BLOCK)_\w+$|^BLOCK$|^CHUNK$|^SUB$|^SCAN_CHUNKS$|^ROUTE_CHUNK$"
                        r"|^k\d+_([XYZ]|R0_)BLOCK$")),
)
PRIORITY = {
    "memory-bound": ("tile", "work-per-program", "warps", "flags", "stages", "split", "swizzle"),
    "compute-bound": ("tile", "stages", "warps", "swizzle", "split", "flags", "work-per-program"),
    "launch-bound": ("work-per-program", "flags", "split", "tile", "warps", "stages", "swizzle"),
    "latency-bound": ("split", "work-per-program", "tile", "warps", "stages", "flags", "swizzle"),
}


def tactic_of(param: str) -> str:
    for tactic, pattern in TACTIC_PATTERNS:
        if pattern.match(param):
            return tactic
    return "flags"


@dataclass(frozen=True)
class Proposal:
    """A candidate to evaluate, with why it was proposed."""

    source: str
    kernel_id: str
    point: dict[str, Any]
    changed: dict[str, tuple[Any, Any]]
    rationale: str
    tactics: list[str] = field(default_factory=list)
    path: str = ""  # which path produced it: "kb …", "transfer from …", "compiler seed", "model …", "person …"


def _neighbours(values: list[Any], current: Any) -> list[Any]:
    if current not in values:
        return list(values)
    index = values.index(current)
    return [values[i] for i in (index - 1, index + 1) if 0 <= i < len(values)]


def _changes(base: dict[str, Any], point: dict[str, Any]) -> str:
    """`point`'s departures from `base`, as a rationale names them: "UPCAST 0 → 1, num_warps 4 → 8"."""
    return ", ".join(f"{k} {base.get(k)!r} → {v!r}" for k, v in point.items() if base.get(k) != v)


class OfflineProposer:
    """Searches one reference kernel's space; `propose` never repeats a point it remembers."""

    name = "offline"

    def __init__(self, kernels: list[ReferenceKernel], seed: int = 0, path: str = "", interpreter: bool = False,
                 single_shot: bool = False) -> None:
        if not kernels:
            raise ProposerError("the knowledge base has no reference kernel for this problem; the offline proposer "
                                "needs one (kb/family/<family>/<op>.py)")
        self.kernel = kernels[0]
        self.rng = random.Random(seed)
        self.path = path or f"{self.kernel.origin} {self.kernel.entry_id}"
        self.interpreter = interpreter  # candidates run in the CPU interpreter, whose low-precision dots are exact
        self.single_shot = single_shot  # a budget of one iteration: a wrong start has no second try

    def adopt(self, source: str, author: str) -> dict[str, Any] | None:
        """A person's adopted edit becomes the kernel this proposer tunes, when it declares TUNABLES and
        SEARCH_SPACE: its point (its TUNABLES), else None (the edit cannot be tuned; the proposer keeps its
        kernel, whose next candidates do not carry the edit)."""
        name = "".join(c if c.isalnum() else "-" for c in author).strip("-") or "person"
        try:
            kernel = kernel_from_source(source, Path(f"edit-by-{name}.py"), f"person:{name}", "person",
                                        self.kernel.family)
        except KbEntryError:
            return None
        self.kernel, self.path = kernel, f"person {author}"
        return dict(kernel.tunables)

    def tactics(self) -> list[str]:
        """The tactics in play for this kernel (a tactic with a single value is not in play)."""
        present = {tactic_of(p) for p, values in self.kernel.search_space.items() if len(values) > 1}
        return sorted(present)

    def first(self) -> Proposal:
        """The reference kernel at its default tunables, or at its accuracy steps where a wrong start could not be
        recovered from: in the interpreter, a kernel whose defaults' error shows only on a GPU (ACCURACY_NEEDS_GPU:
        the interpreter cannot tell the two apart; a GPU session takes the steps after its first evaluation), and
        with a budget of one iteration, any kernel that declares steps (no second iteration would take them)."""
        base = dict(self.kernel.tunables)
        start = {"kb": f"the knowledge base's reference kernel {self.kernel.entry_id}"}.get(self.kernel.origin,
                                                                                           self.path)
        why = ""
        if self.interpreter and self.kernel.accuracy_needs_gpu:
            why = "its defaults' error shows only on a GPU, and the CPU interpreter computes low-precision dots exactly"
        elif self.single_shot and self.kernel.accuracy_steps:
            why = "with one iteration a wrong start has no second try, and its defaults may miss a tight tolerance"
        if why:
            point = dict(base)
            for step in self.kernel.accuracy_steps:
                point.update(step)
            return self._proposal(point, base, None, f"start from {start} at its accuracy steps "
                                  f"({_changes(base, point)}): {why}", self.tactics())
        return Proposal(self.kernel.instantiate(base), self.kernel.entry_id, base, {},
                        f"start from {start} at its defaults", self.tactics(), self.path)

    def recover(self, tried: list[dict[str, Any]], error: str | None = None) -> Proposal:
        """The next start when every point tried so far was wrong (there is no incumbent to step from): the
        kernel's ACCURACY_STEPS from the defaults, each on top of the ones before, then seeded random points of
        the space. Proposing the defaults again would only repeat the failure."""
        seen = {self._key(p) for p in tried}
        start = self.first()
        if self._key(start.point) not in seen:  # what failed was another kernel (a person's)
            return start
        why = f"every start so far was wrong ({(error or 'no detail').splitlines()[0][:120]})"
        base = dict(self.kernel.tunables)
        point = dict(base)
        for step in self.kernel.accuracy_steps:
            point = {**point, **step}
            if self._key(point) not in seen:
                return self._proposal(point, base, None, f"{why}: the kernel's accuracy step {_changes(base, point)}",
                                      self.tactics())
        for _ in range(200):
            point = {p: self.rng.choice(v) for p, v in self.kernel.search_space.items()}
            if self._key(point) not in seen:
                return self._proposal(point, base, None, f"{why}: random restart", self.tactics())
        raise ProposerError(f"the search space of {self.kernel.entry_id} is exhausted")

    def propose(self, incumbent: dict[str, Any], remembered: list[dict[str, Any]], bottleneck: str | None,
                tactics_in_play: list[str]) -> Proposal:
        """One step from the incumbent: change one tunable of the highest-priority tactic in play."""
        seen = {self._key(p) for p in remembered} | {self._key(incumbent)}
        order = PRIORITY.get(bottleneck or "", PRIORITY["memory-bound"])
        # a tunable that is inert at the incumbent (the kernel's INERT rules) would only re-measure it
        params = [p for p, values in self.kernel.search_space.items()
                  if len(values) > 1 and tactic_of(p) in tactics_in_play and not self.kernel.is_inert(p, incumbent)]
        params.sort(key=lambda p: (order.index(tactic_of(p)) if tactic_of(p) in order else len(order),
                                   self.rng.random()))
        for param in params:
            options = _neighbours(self.kernel.search_space[param], incumbent.get(param))
            self.rng.shuffle(options)
            for value in options:
                point = {**incumbent, param: value}
                if self._key(point) not in seen:
                    return self._proposal(point, incumbent, bottleneck,
                                          f"{bottleneck or 'unknown'} bottleneck: try {tactic_of(param)} "
                                          f"{param} {incumbent.get(param)!r} → {value!r}", tactics_in_play)
        unlocked = self._unlocking_step(incumbent, seen, tactics_in_play)
        if unlocked is not None:
            point, why = unlocked
            return self._proposal(point, incumbent, bottleneck, f"{bottleneck or 'unknown'} bottleneck: {why}",
                                  tactics_in_play)
        for _ in range(200):  # the neighbourhood is exhausted: a seeded random restart inside the space
            point = {p: self.rng.choice(v) for p, v in self.kernel.search_space.items()}
            if self._key(point) not in seen:
                return self._proposal(point, incumbent, bottleneck, "neighbourhood exhausted: random restart",
                                      tactics_in_play)
        raise ProposerError(f"the search space of {self.kernel.entry_id} is exhausted")

    def _unlocking_step(self, incumbent: dict[str, Any], seen: set[tuple],
                        tactics_in_play: list[str]) -> tuple[dict[str, Any], str] | None:
        """A tactic in play whose tunables are all inert at the incumbent (e.g. warps under a kernel's AUTO
        switch): set the switch so that one of them reaches the launch, and change it."""
        for param, values in self.kernel.search_space.items():
            if len(values) < 2 or tactic_of(param) not in tactics_in_play or not self.kernel.is_inert(param, incumbent):
                continue
            conditions = self.kernel.inert.get(param) or {}
            unlock = {k: next((v for v in self.kernel.search_space.get(k, []) if v not in held), None)
                      for k, held in conditions.items()}
            if any(v is None for v in unlock.values()):
                continue
            for value in _neighbours(values, incumbent.get(param)):
                point = {**incumbent, **unlock, param: value}
                if self._key(point) not in seen:
                    switches = ", ".join(f"{k} {incumbent.get(k)!r} → {v!r}" for k, v in unlock.items())
                    return point, (f"try {tactic_of(param)} {param} {incumbent.get(param)!r} → {value!r} "
                                   f"({switches}, so that it reaches the launch)")
        return None

    def _proposal(self, point: dict[str, Any], incumbent: dict[str, Any], bottleneck: str | None, why: str,
                  tactics: list[str]) -> Proposal:
        changed = {k: (incumbent.get(k), v) for k, v in point.items() if incumbent.get(k) != v}
        return Proposal(self.kernel.instantiate(point), self.kernel.entry_id, point, changed, why, list(tactics),
                        self.path)

    def _key(self, point: dict[str, Any]) -> tuple:
        """Points that differ only in inert tunables launch the same kernel: one key."""
        return tuple(sorted(self.kernel.canonical(point).items()))
