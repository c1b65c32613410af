"""Knowledge-base edits made from the app, validated with the store's own parser before anything changes."""

from __future__ import annotations

from pathlib import Path

from aka_tui.errors import KbEntryError
from aka_tui.knowledge.entry import KbEntry, parse_entry
from aka_tui.knowledge.store import KnowledgeBase, home_folder, write_entry

NEW_ENTRY_TEMPLATE = """+++
id = "my-new-entry"
layer = "dsl"
kind = "technique"
title = "What this entry teaches, in one line"
status = "accepted"
signals = ["memory-bound"]
triggers = ["when to consider it"]

[scope]
vendor = []
arch = []
dsl = ["triton"]
family = []
ops = []

[worth]
speedup = 0.0
measured_on = ""
source = "documented"
+++
The body: what to do, why it helps, and how to check it.
"""


TEMPLATE_PLACEHOLDERS = (("id", "my-new-entry"), ("title", "What this entry teaches, in one line"),
                         ("body", "The body: what to do, why it helps, and how to check it."))


def template_left(entry: KbEntry) -> list[str]:
    """The template's placeholders still in a new entry (its id, title or body as the template wrote them)."""
    values = {"id": entry.id, "title": entry.title, "body": entry.body.strip()}
    return [name for name, placeholder in TEMPLATE_PLACEHOLDERS if values[name] == placeholder]


def validation_message(kb: KnowledgeBase, text: str, editing: KbEntry | None) -> str:
    """'' when `text` is a valid entry for this place; otherwise the parser's message (file and field)."""
    try:
        entry = parse_new_text(kb, text, editing)
    except KbEntryError as exc:
        return str(exc)
    left = template_left(entry) if editing is None else []
    if left:
        return f"the template's {', '.join(left)} {'is' if len(left) == 1 else 'are'} still there: write your own"
    if editing is None and (entry.id in kb.entries or entry.id in kb.pending):
        return f"an entry with id {entry.id!r} already exists"
    if editing is not None and entry.id != editing.id:
        return f"the id cannot change in an edit ({editing.id} → {entry.id})"
    if editing is None and entry.kind == "reference-kernel":
        return "add reference kernels by placing the .md and .py under kb/family/<family>/"
    return ""


def parse_new_text(kb: KnowledgeBase, text: str, editing: KbEntry | None) -> KbEntry:
    """Parse as if the text were saved where it will live."""
    if editing is not None:
        return parse_entry(editing.path, text=text, layer_from_path=None)
    probe = parse_entry(Path("draft") / f"{_id_in(text)}.md", text=text, layer_from_path=None)
    return parse_entry(home_folder(kb.root, probe) / f"{probe.id}.md", text=text, layer_from_path=None)


def _id_in(text: str) -> str:
    import tomllib

    from aka_tui.knowledge.entry import split_front_matter

    try:
        front, _ = split_front_matter(text)
        value = tomllib.loads(front).get("id")
    except (ValueError, tomllib.TOMLDecodeError):
        return "draft"
    return value if isinstance(value, str) and value else "draft"


def add_entry(kb: KnowledgeBase, text: str) -> Path:
    """Write a new accepted entry into its layer folder."""
    message = validation_message(kb, text, None)
    if message:
        raise KbEntryError(message)
    return write_entry(kb, parse_new_text(kb, text, None))


def save_edit(kb: KnowledgeBase, entry: KbEntry, text: str) -> Path:
    """Replace an entry's file with edited text (moved when its layer or family folder changed)."""
    message = validation_message(kb, text, entry)
    if message:
        raise KbEntryError(message)
    edited = parse_entry(entry.path, text=text, layer_from_path=None)
    pending = entry.id in kb.pending
    target = entry.path if pending or home_folder(kb.root, edited) == entry.path.parent \
        else home_folder(kb.root, edited) / entry.path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    if target != entry.path:
        entry.path.unlink()
    return target
