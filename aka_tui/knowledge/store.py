"""The knowledge base on disk: load and validate every entry, add, remove, and curate proposed ones."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from aka_tui.errors import KbEntryError
from aka_tui.knowledge.entry import LAYERS, KbEntry, parse_entry, render_entry
from aka_tui.paths import checkout_dir

PENDING = "pending"
REJECTED = "rejected"


def default_kb_dir() -> Path:
    """The shipped knowledge base: `kb/` beside the package (a source checkout)."""
    return checkout_dir() / "kb"


@dataclass
class KnowledgeBase:
    """Accepted entries by id, proposed (pending) entries by id, and the files that failed validation."""

    root: Path
    entries: dict[str, KbEntry] = field(default_factory=dict)
    pending: dict[str, KbEntry] = field(default_factory=dict)
    errors: list[KbEntryError] = field(default_factory=list)

    def get(self, entry_id: str) -> KbEntry:
        if entry_id in self.entries:
            return self.entries[entry_id]
        if entry_id in self.pending:
            return self.pending[entry_id]
        raise KbEntryError(f"no knowledge-base entry with id {entry_id!r} (see `aka kb search`)")

    def by_layer(self, layer: str) -> list[KbEntry]:
        return sorted((e for e in self.entries.values() if e.layer == layer), key=lambda e: e.id)


def _layer_of(root: Path, path: Path) -> str | None:
    parts = path.relative_to(root).parts
    return parts[0] if parts and parts[0] in LAYERS else None


def load_kb(root: str | Path | None = None) -> KnowledgeBase:
    """Load every `*.md` under the root; malformed files are collected in `errors`, the rest still loads."""
    root = Path(root) if root else default_kb_dir()
    kb = KnowledgeBase(root)
    if not root.is_dir():
        kb.errors.append(KbEntryError(f"{root}: knowledge-base directory does not exist"))
        return kb
    for path in sorted(root.rglob("*.md")):
        relative = path.relative_to(root).parts
        if relative[0] == PENDING:
            if len(relative) > 2 and relative[1] == REJECTED:
                continue
            target = kb.pending
            layer = None
        elif relative[0] in LAYERS:
            target = kb.entries
            layer = relative[0]
        else:
            continue  # README.md and other documentation at the top level
        try:
            entry = parse_entry(path, layer_from_path=layer)
        except KbEntryError as exc:
            kb.errors.append(exc)
            continue
        if entry.id in kb.entries or entry.id in kb.pending:
            other = (kb.entries.get(entry.id) or kb.pending[entry.id]).path
            kb.errors.append(KbEntryError(f"{path}: id: {entry.id!r} is already used by {other}"))
            continue
        target[entry.id] = entry
    return kb


def home_folder(root: Path, entry: KbEntry) -> Path:
    """Where an accepted entry lives: kb/<layer>/ (family entries under kb/family/<family>/)."""
    if entry.layer == "family":
        families = entry.scope_values("family")
        return root / "family" / (families[0] if families else "general")
    return root / entry.layer


def write_entry(kb: KnowledgeBase, entry: KbEntry, pending: bool = False, overwrite: bool = False) -> Path:
    """Validate and write an entry (new ones only unless `overwrite`); returns its path."""
    if not overwrite and (entry.id in kb.entries or entry.id in kb.pending):
        raise KbEntryError(f"an entry with id {entry.id!r} already exists ({kb.get(entry.id).path})")
    folder = kb.root / PENDING if pending else home_folder(kb.root, entry)
    path = folder / f"{entry.id}.md"
    text = render_entry(replace(entry, status="proposed" if pending else entry.status, path=path))
    parsed = parse_entry(path, text=text, layer_from_path=None if pending else _layer_of(kb.root, path))
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    (kb.pending if pending else kb.entries)[parsed.id] = parsed
    return path


def remove_entry(kb: KnowledgeBase, entry_id: str) -> Path:
    """Delete an accepted entry's file (the git history keeps it)."""
    entry = kb.get(entry_id)
    entry.path.unlink()
    kb.entries.pop(entry_id, None)
    kb.pending.pop(entry_id, None)
    return entry.path


def accept_pending(kb: KnowledgeBase, entry_id: str) -> Path:
    """Move a proposed entry into its layer folder as accepted."""
    if entry_id not in kb.pending:
        raise KbEntryError(f"no pending entry {entry_id!r}; pending: {', '.join(sorted(kb.pending)) or 'none'}")
    entry = kb.pending.pop(entry_id)
    path = write_entry(kb, replace(entry, status="accepted"), pending=False)
    entry.path.unlink()
    return path


def reject_pending(kb: KnowledgeBase, entry_id: str) -> Path:
    """Move a proposed entry to pending/rejected/ (kept, never silently deleted)."""
    if entry_id not in kb.pending:
        raise KbEntryError(f"no pending entry {entry_id!r}; pending: {', '.join(sorted(kb.pending)) or 'none'}")
    entry = kb.pending.pop(entry_id)
    target = kb.root / PENDING / REJECTED / entry.path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(entry.path), target)
    return target
