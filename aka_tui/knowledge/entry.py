"""Knowledge-base entries: Markdown with TOML front matter between `+++` lines (see docs/kb-format.md)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomllib

from aka_tui.errors import KbEntryError

LAYERS = ("hardware", "architecture", "dsl", "family", "experience")
KINDS = ("fact", "technique", "anti-pattern", "reference-kernel")
STATUSES = ("accepted", "proposed")
SCOPE_KEYS = ("vendor", "arch", "dsl", "family", "ops")
SIGNALS = ("memory-bound", "compute-bound", "launch-bound", "latency-bound", "occupancy", "register-pressure",
           "correctness")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
FENCE = "+++"


@dataclass(frozen=True)
class Worth:
    """Measured gain of an entry, or `documented` when it is not measured."""

    speedup: float = 0.0
    measured_on: str = ""
    source: str = "documented"  # documented | measured

    @property
    def measured(self) -> bool:
        return self.source == "measured" and self.speedup > 0


@dataclass(frozen=True)
class KbEntry:
    """One knowledge-base entry."""

    id: str
    layer: str
    kind: str
    title: str
    body: str
    path: Path
    status: str = "accepted"
    signals: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    scope: dict[str, tuple[str, ...]] = field(default_factory=dict)
    worth: Worth = field(default_factory=Worth)
    kernel: str = ""

    @property
    def kernel_path(self) -> Path | None:
        return self.path.parent / self.kernel if self.kernel else None

    @property
    def content_hash(self) -> str:
        digest = hashlib.sha256(render_entry(self).encode())
        if self.kernel_path and self.kernel_path.is_file():
            digest.update(self.kernel_path.read_bytes())
        return digest.hexdigest()[:16]

    def scope_values(self, key: str) -> tuple[str, ...]:
        return self.scope.get(key, ())

    def embedding_text(self) -> str:
        """What the index embeds: title, triggers, signals and the body."""
        return "\n".join([self.title, "Triggers: " + "; ".join(self.triggers), "Signals: " + ", ".join(self.signals),
                          self.body])[:4000]


def split_front_matter(text: str) -> tuple[str, str]:
    """(front matter, body); raises ValueError when the `+++` fences are missing."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise ValueError("the file must start with a `+++` line (TOML front matter)")
    for index in range(1, len(lines)):
        if lines[index].strip() == FENCE:
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1:]).strip()
    raise ValueError("the front matter has no closing `+++` line")


def read_text_file(path: Path) -> str:
    """A knowledge-base file as text; unreadable or not UTF-8 → one KbEntryError line naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KbEntryError(f"{path}: file: is not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from None
    except OSError as exc:
        raise KbEntryError(f"{path}: file: cannot be read ({exc.strerror or exc})") from None


def _fail(path: Path, field_name: str, what: str) -> KbEntryError:
    return KbEntryError(f"{path}: {field_name}: {what}")


def _str_list(path: Path, name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, name, "must be a list of strings")
    return tuple(value)


def parse_entry(path: Path, text: str | None = None, layer_from_path: str | None = None) -> KbEntry:
    """Parse and validate one entry; a KbEntryError names the file and the field."""
    text = read_text_file(path) if text is None else text
    try:
        front, body = split_front_matter(text)
    except ValueError as exc:
        raise _fail(path, "front matter", str(exc)) from None
    try:
        meta = tomllib.loads(front)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(path, "front matter", f"invalid TOML ({exc})") from None
    for key in ("id", "layer", "kind", "title"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise _fail(path, key, "is required (a non-empty string)")
    entry_id = meta["id"]
    if not ID_RE.match(entry_id):
        raise _fail(path, "id", f"{entry_id!r} must be lowercase letters, digits and hyphens")
    if entry_id != path.stem:
        raise _fail(path, "id", f"{entry_id!r} must match the file name {path.stem!r}")
    if meta["layer"] not in LAYERS:
        raise _fail(path, "layer", f"{meta['layer']!r} is not one of {', '.join(LAYERS)}")
    if layer_from_path and meta["layer"] != layer_from_path:
        raise _fail(path, "layer", f"{meta['layer']!r} but the file is under {layer_from_path}/")
    if meta["kind"] not in KINDS:
        raise _fail(path, "kind", f"{meta['kind']!r} is not one of {', '.join(KINDS)}")
    status = meta.get("status", "accepted")
    if status not in STATUSES:
        raise _fail(path, "status", f"{status!r} is not one of {', '.join(STATUSES)}")
    signals = _str_list(path, "signals", meta.get("signals"))
    unknown = [s for s in signals if s not in SIGNALS]
    if unknown:
        raise _fail(path, "signals", f"unknown {', '.join(unknown)}; use {', '.join(SIGNALS)}")
    raw_scope = meta.get("scope", {})
    if not isinstance(raw_scope, dict):
        raise _fail(path, "scope", "must be a table")
    extra = set(raw_scope) - set(SCOPE_KEYS)
    if extra:
        raise _fail(path, "scope", f"unknown key(s) {', '.join(sorted(extra))}; use {', '.join(SCOPE_KEYS)}")
    scope = {key: tuple(v.lower() for v in _str_list(path, f"scope.{key}", raw_scope.get(key))) for key in SCOPE_KEYS}
    raw_worth = meta.get("worth", {})
    if not isinstance(raw_worth, dict):
        raise _fail(path, "worth", "must be a table")
    try:
        worth = Worth(float(raw_worth.get("speedup", 0.0)), str(raw_worth.get("measured_on", "")),
                      str(raw_worth.get("source", "documented")))
    except (TypeError, ValueError):
        raise _fail(path, "worth.speedup", "must be a number") from None
    if worth.source not in ("documented", "measured"):
        raise _fail(path, "worth.source", "must be documented or measured")
    if worth.source == "measured" and not worth.measured_on:
        raise _fail(path, "worth.measured_on", "a measured worth says where it was measured")
    kernel = str(meta.get("kernel", ""))
    if meta["kind"] == "reference-kernel":
        if not kernel:
            raise _fail(path, "kernel", "a reference-kernel entry names its .py file")
        if not (path.parent / kernel).is_file():
            raise _fail(path, "kernel", f"{kernel} does not exist beside the entry")
    if not body:
        raise _fail(path, "body", "is empty")
    return KbEntry(entry_id, meta["layer"], meta["kind"], meta["title"].strip(), body, path, status,
                   signals, _str_list(path, "triggers", meta.get("triggers")), scope, worth, kernel)


def _toml_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def render_entry(entry: KbEntry) -> str:
    """The file text of an entry (round-trips through parse_entry)."""
    lines = [
        FENCE, f"id = {_toml_str(entry.id)}", f"layer = {_toml_str(entry.layer)}", f"kind = {_toml_str(entry.kind)}",
        f"title = {_toml_str(entry.title)}", f"status = {_toml_str(entry.status)}",
        f"signals = {_toml_list(entry.signals)}", f"triggers = {_toml_list(entry.triggers)}",
    ]
    if entry.kernel:
        lines.append(f"kernel = {_toml_str(entry.kernel)}")
    lines += ["", "[scope]"] + [f"{k} = {_toml_list(entry.scope_values(k))}" for k in SCOPE_KEYS]
    lines += ["", "[worth]", f"speedup = {entry.worth.speedup}", f"measured_on = {_toml_str(entry.worth.measured_on)}",
              f"source = {_toml_str(entry.worth.source)}", FENCE, entry.body.strip(), ""]
    return "\n".join(lines)


def with_status(entry: KbEntry, status: str, path: Path) -> KbEntry:
    return replace(entry, status=status, path=path)
