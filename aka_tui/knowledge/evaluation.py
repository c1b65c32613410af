"""Retrieval quality: recall@k on a written query set, and a leak check over every scoped entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aka_tui.knowledge.entry import LAYERS, SCOPE_KEYS
from aka_tui.knowledge.index import KbIndex
from aka_tui.knowledge.retrieval import KbQuery, rank_layer, retrieve
from aka_tui.knowledge.store import KnowledgeBase

# Scope values a query may carry, per key, used to pick a value *other* than an entry's own.
OTHER_VALUES = {
    "vendor": ["nvidia", "amd", "cpu"],
    "arch": ["hopper", "ampere", "cdna3", "cpu"],
    "dsl": ["triton", "cuda"],
    "family": ["attention", "moe", "gemm", "norm", "activation", "rope", "quantization", "kv_cache", "sampling",
               "linear_attention"],
}


@dataclass
class RecallReport:
    recall: float
    count: int
    lines: list[str] = field(default_factory=list)


def query_from(spec: dict[str, Any]) -> KbQuery:
    scope = spec.get("scope", {})
    return KbQuery(text=spec["query"], hardware=scope.get("hardware"), vendor=scope.get("vendor"),
                   arch=scope.get("arch"), dsl=scope.get("dsl", "triton"), family=scope.get("family"),
                   op=scope.get("op"), layers=tuple(spec.get("layers", LAYERS)))


def top_k(kb: KnowledgeBase, index: KbIndex, query: KbQuery, k: int) -> list[str]:
    ranked = [r for layer in query.layers for r in rank_layer(kb, index, query, layer)]
    ranked.sort(key=lambda r: -r.score)
    return [r.entry.id for r in ranked[:k]]


def evaluate_retrieval(kb: KnowledgeBase, index: KbIndex, queries: list[dict[str, Any]], k: int = 3) -> RecallReport:
    """Mean over queries of |expected ∩ top-k| / |expected|."""
    total = 0.0
    lines = []
    for spec in queries:
        expected = list(spec["expected"])
        missing = [e for e in expected if e not in kb.entries]
        if missing:
            lines.append(f"MISSING ids {missing} for query {spec['query']!r}")
        got = top_k(kb, index, query_from(spec), k)
        hit = len(set(expected) & set(got)) / len(expected)
        total += hit
        mark = "ok " if hit == 1 else ("part" if hit else "MISS")
        lines.append(f"{mark} {hit:4.2f}  {spec['query'][:70]:70s} → {', '.join(got)}")
    return RecallReport(total / len(queries) if queries else 0.0, len(queries), lines)


@dataclass
class LeakReport:
    queries: int
    leaks: list[str]


def leak_check(kb: KnowledgeBase, index: KbIndex) -> LeakReport:
    """For every scoped entry, ask with its own title (so it ranks first semantically) under a scope value it
    excludes; it must not come back — neither from the layered retrieval nor from the flat ranking."""
    leaks: list[str] = []
    count = 0
    for entry in kb.entries.values():
        for key in ("vendor", "arch", "dsl", "family"):
            own = entry.scope_values(key)
            if not own:
                continue
            other = next((v for v in OTHER_VALUES[key] if v not in own), None)
            if other is None:
                continue
            scope: dict[str, str | None] = {k: None for k in SCOPE_KEYS}
            scope[key] = other
            query = KbQuery(text=entry.title + " " + " ".join(entry.triggers), vendor=scope["vendor"],
                            arch=scope["arch"], dsl=scope["dsl"], family=scope["family"], op=None,
                            per_layer={layer: 50 for layer in LAYERS}, budget_chars=10**9)
            count += 1
            returned = set(retrieve(kb, index, query).ids) | set(top_k(kb, index, query, 50))
            if entry.id in returned:
                leaks.append(f"{entry.id} (scope {key}={list(own)}) returned for {key}={other}")
    return LeakReport(count, leaks)
