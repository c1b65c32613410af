"""Kernel-name → operator rules: a JSON or TOML file (no YAML: the core runs with the standard library)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_tui.errors import TraceError

DEFAULT_RULES = Path(__file__).with_name("default_rules.json")
RULE_FIELDS = ("kernel", "cpu_op")


@dataclass(frozen=True)
class Rule:
    """Maps a GPU kernel to `op` when every given pattern matches (searched, case-insensitive)."""

    op: str
    kernel: re.Pattern[str] | None = None
    cpu_op: re.Pattern[str] | None = None  # name of the innermost CPU op that launched the kernel
    exclude: re.Pattern[str] | None = None  # kernel names this rule must not take
    source: str = ""

    def matches(self, kernel: str, cpu_op: str | None) -> bool:
        if self.exclude is not None and self.exclude.search(kernel):
            return False
        if self.kernel is not None and not self.kernel.search(kernel):
            return False
        if self.cpu_op is not None and not (cpu_op and self.cpu_op.search(cpu_op)):
            return False
        return True


@dataclass(frozen=True)
class RuleSet:
    """Ordered rules (first match wins) and where they came from."""

    rules: tuple[Rule, ...]
    sources: tuple[str, ...]
    sha256: str

    def match(self, kernel: str, cpu_op: str | None = None) -> Rule | None:
        for rule in self.rules:
            if rule.matches(kernel, cpu_op):
                return rule
        return None


def _compile(path: Path, index: int, field: str, value: Any) -> re.Pattern[str] | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TraceError(f"rules {path}: rule {index}: `{field}` must be a non-empty regular expression string")
    try:
        return re.compile(value, re.IGNORECASE)
    except re.error as exc:
        raise TraceError(f"rules {path}: rule {index}: bad regular expression in `{field}`: {exc}") from None


def _parse(path: Path, data: Any) -> list[Rule]:
    raw = data.get("rules", data.get("rule")) if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise TraceError(f"rules {path}: expected a `rules` list (JSON) or `[[rule]]` tables (TOML); see docs/trace.md")
    rules: list[Rule] = []
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict) or not isinstance(spec.get("op"), str) or not spec["op"]:
            raise TraceError(f"rules {path}: rule {i} needs an `op` name")
        unknown = set(spec) - {"op", "kernel", "cpu_op", "exclude", "note"}
        if unknown:
            raise TraceError(f"rules {path}: rule {i}: unknown field(s) {', '.join(sorted(unknown))}")
        if not any(spec.get(f) for f in RULE_FIELDS):
            raise TraceError(f"rules {path}: rule {i} ({spec['op']}) needs `kernel` or `cpu_op`")
        rules.append(Rule(spec["op"], _compile(path, i, "kernel", spec.get("kernel")),
                          _compile(path, i, "cpu_op", spec.get("cpu_op")),
                          _compile(path, i, "exclude", spec.get("exclude")), source=path.name))
    return rules


def read_rules_file(path: Path) -> list[Rule]:
    """Rules of one file: `.toml` by tomllib, anything else as JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"cannot read rules file {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise TraceError(f"cannot read rules file {path}: {exc.strerror or exc}") from None
    if path.suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            raise TraceError(f"rules {path}: TOML rules need Python 3.11+ (tomllib); use a .json rules file") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TraceError(f"rules {path} does not parse: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(f"rules {path} does not parse: {exc}") from None
    return _parse(path, data)


def load_rules(extra: list[Path] | None = None, defaults: bool = True) -> RuleSet:
    """The files in `extra` (in order, they win) followed by the shipped defaults."""
    paths = list(extra or []) + ([DEFAULT_RULES] if defaults else [])
    rules: list[Rule] = []
    digest = hashlib.sha256()
    for path in paths:
        rules.extend(read_rules_file(path))
        digest.update(path.read_bytes())
    return RuleSet(tuple(rules), tuple(str(p) if p != DEFAULT_RULES else "default" for p in paths),
                   digest.hexdigest())
