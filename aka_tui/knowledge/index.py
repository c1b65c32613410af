"""The derived Chroma index of the knowledge base: persistent, incremental by content hash, self-healing.

Embeddings are computed by us (embedding.py) and passed to Chroma explicitly; collections are created
without an embedding function, so Chroma's default (a run-time model download) is never used.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from aka_tui.knowledge import embedding
from aka_tui.knowledge.store import KnowledgeBase
from aka_tui.paths import aka_home

COLLECTION = "aka-kb-v1"


@dataclass(frozen=True)
class SyncReport:
    added: int
    updated: int
    removed: int
    unchanged: int
    rebuilt: bool = False

    def __str__(self) -> str:
        head = "rebuilt; " if self.rebuilt else ""
        return f"{head}{self.added} added, {self.updated} updated, {self.removed} removed, {self.unchanged} unchanged"


def default_index_dir(kb_root: Path) -> Path:
    digest = hashlib.sha1(str(kb_root.resolve()).encode()).hexdigest()[:12]
    return aka_home() / "kb-index" / digest


class KbIndex:
    """Chroma collection mirroring the accepted entries of one knowledge-base directory."""

    def __init__(self, kb_root: Path, index_dir: Path | None = None,
                 on_message: Callable[[str], object] | None = None) -> None:
        self.kb_root = kb_root
        self.index_dir = index_dir or default_index_dir(kb_root)
        self.on_message = on_message or (lambda _m: None)
        self._collection: Any = None
        self.rebuilt = False

    def _open(self) -> Any:
        import chromadb

        self.index_dir.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(path=str(self.index_dir),
                                           settings=chromadb.Settings(anonymized_telemetry=False))
        collection = client.get_or_create_collection(COLLECTION, metadata={"hnsw:space": "cosine"},
                                                      embedding_function=None)
        collection.count()  # touch the storage so corruption shows here
        return collection

    @property
    def collection(self) -> Any:
        if self._collection is None:
            try:
                self._collection = self._open()
            except Exception as exc:  # a corrupt or incompatible index is derived data: rebuild it
                self.on_message(f"knowledge index at {self.index_dir} is unreadable ({type(exc).__name__}: "
                                f"{str(exc)[:120]}); rebuilding it from {self.kb_root}")
                self._drop_files()
                self.rebuilt = True
                self._collection = self._open()
        return self._collection

    def sync(self, kb: KnowledgeBase) -> SyncReport:
        """Bring the index in line with the accepted entries: embed new or changed ones, drop removed ones."""
        try:
            existing = self.collection.get(include=["metadatas"])
            indexed = {i: (m or {}).get("hash") for i, m in zip(existing["ids"], existing["metadatas"])}
        except Exception as exc:
            self.on_message(f"knowledge index unreadable ({type(exc).__name__}); rebuilding it from {self.kb_root}")
            self._collection = None
            self._drop_files()
            self.rebuilt = True
            indexed = {}
        wanted = {e.id: e for e in kb.entries.values()}
        hashes = {i: e.content_hash for i, e in wanted.items()}
        stale = [i for i in wanted if indexed.get(i) != hashes[i]]
        removed = [i for i in indexed if i not in wanted]
        if removed:
            self.collection.delete(ids=removed)
        if stale:
            entries = [wanted[i] for i in stale]
            self.collection.upsert(
                ids=stale, embeddings=embedding.embed([e.embedding_text() for e in entries]),
                documents=[e.embedding_text() for e in entries],
                metadatas=[{"layer": e.layer, "kind": e.kind, "hash": hashes[e.id]} for e in entries])
        added = sum(1 for i in stale if i not in indexed)
        return SyncReport(added, len(stale) - added, len(removed), len(wanted) - len(stale), self.rebuilt)

    def rank(self, text: str, layer: str, limit: int) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the entries of one layer most similar to `text`."""
        total = self.collection.count()
        if total == 0:
            return []
        result = self.collection.query(query_embeddings=[list(embedding.embed_query(text))], n_results=min(limit, total),
                                       where={"layer": layer}, include=["distances"])
        return [(i, 1.0 - float(d)) for i, d in zip(result["ids"][0], result["distances"][0])]

    def _drop_files(self) -> None:
        """Delete the index directory and forget Chroma's cached client for it (it caches one per path)."""
        try:
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        except (ImportError, AttributeError):
            pass
        shutil.rmtree(self.index_dir, ignore_errors=True)

    def reset(self) -> None:
        """Drop the whole index (it is rebuilt on the next sync)."""
        self._collection = None
        self._drop_files()
