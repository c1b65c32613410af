"""Layered retrieval: hard scope filters first, then semantic ranking boosted by measured worth,
assembled layer by layer (hardware → architecture → DSL → family → experience) within a budget."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from aka_tui.knowledge.entry import LAYERS, KbEntry
from aka_tui.knowledge.index import KbIndex
from aka_tui.knowledge.store import KnowledgeBase

DEFAULT_PER_LAYER = {"hardware": 1, "architecture": 3, "dsl": 4, "family": 5, "experience": 3}
WORTH_BOOST = 0.08  # similarity bonus per doubling of a measured speed-up (log2(1 + speedup))


@dataclass(frozen=True)
class KbQuery:
    """What the agent (or a person) asks, and where: scope values select, text ranks."""

    text: str
    hardware: str | None = None  # profile name, e.g. "h200": exact lookup of its hardware entry
    vendor: str | None = None
    arch: str | None = None
    dsl: str | None = "triton"
    family: str | None = None
    op: str | None = None
    layers: tuple[str, ...] = LAYERS
    per_layer: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PER_LAYER))
    budget_chars: int = 12000

    def scope_items(self) -> list[tuple[str, str | None]]:
        return [("vendor", self.vendor), ("arch", self.arch), ("dsl", self.dsl), ("family", self.family),
                ("ops", self.op)]


@dataclass(frozen=True)
class RetrievedEntry:
    entry: KbEntry
    score: float
    similarity: float
    how: str  # "exact" | "semantic"


@dataclass
class Retrieval:
    entries: list[RetrievedEntry]
    used_chars: int
    over_budget: list[str]

    @property
    def ids(self) -> list[str]:
        return [r.entry.id for r in self.entries]


def scope_allows(entry: KbEntry, query: KbQuery) -> bool:
    """An entry scoped to other vendors, architectures, DSLs, families or ops never passes."""
    for key, value in query.scope_items():
        allowed = entry.scope_values(key)
        if allowed and value is not None and value.lower() not in allowed:
            return False
    return True


def hardware_entry_id(profile_name: str) -> str:
    return "hw-" + profile_name.lower().replace("_", "-")


def _boost(entry: KbEntry) -> float:
    return WORTH_BOOST * math.log2(1.0 + entry.worth.speedup) if entry.worth.measured else 0.0


def rank_layer(kb: KnowledgeBase, index: KbIndex, query: KbQuery, layer: str) -> list[RetrievedEntry]:
    """Entries of one layer that pass the scope filter, best first."""
    allowed = {e.id: e for e in kb.by_layer(layer) if scope_allows(e, query)}
    if not allowed:
        return []
    ranked: list[RetrievedEntry] = []
    if layer == "hardware" and query.hardware:
        exact = allowed.get(hardware_entry_id(query.hardware))
        if exact is not None:
            return [RetrievedEntry(exact, 1.0, 1.0, "exact")]
    similarities = dict(index.rank(query.text, layer, limit=len(kb.by_layer(layer))))
    for entry_id, entry in allowed.items():
        similarity = similarities.get(entry_id)
        if similarity is None:
            continue  # not indexed yet (sync first)
        ranked.append(RetrievedEntry(entry, similarity + _boost(entry), similarity, "semantic"))
    return sorted(ranked, key=lambda r: -r.score)


def retrieve(kb: KnowledgeBase, index: KbIndex, query: KbQuery) -> Retrieval:
    """Assemble entries layer by layer within the character budget (bodies count against it)."""
    chosen: list[RetrievedEntry] = []
    over: list[str] = []
    used = 0
    for layer in LAYERS:
        if layer not in query.layers:
            continue
        quota = query.per_layer.get(layer, 3)
        for candidate in rank_layer(kb, index, query, layer)[: max(quota, 0) * 2]:
            if sum(1 for c in chosen if c.entry.layer == layer) >= quota:
                break
            size = len(candidate.entry.body) + len(candidate.entry.title)
            if used + size > query.budget_chars:
                over.append(candidate.entry.id)
                continue
            chosen.append(candidate)
            used += size
    return Retrieval(chosen, used, over)


def render_context(retrieval: Retrieval) -> str:
    """Retrieved knowledge as prompt text, grouped by layer."""
    parts: list[str] = []
    for layer in LAYERS:
        items = [r for r in retrieval.entries if r.entry.layer == layer]
        if not items:
            continue
        parts.append(f"## {layer}")
        for item in items:
            worth = f" (measured {item.entry.worth.speedup:g}x on {item.entry.worth.measured_on})" \
                if item.entry.worth.measured else ""
            parts.append(f"### {item.entry.title} [{item.entry.id}, {item.entry.kind}]{worth}\n{item.entry.body}")
    return "\n\n".join(parts)
