"""Reference kernels of the knowledge base: their tunables, search space, and instantiation at a point.

A reference kernel is a complete candidate file with two module-level dict literals, `TUNABLES` and
`SEARCH_SPACE`; instantiating it at a point rewrites the `TUNABLES` literal and nothing else.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_tui.errors import KbEntryError
from aka_tui.knowledge.entry import KbEntry
from aka_tui.knowledge.store import KnowledgeBase


@dataclass(frozen=True)
class ReferenceKernel:
    entry_id: str
    path: Path
    ops: tuple[str, ...]
    family: str
    tunables: dict[str, Any]
    search_space: dict[str, list[Any]]

    @property
    def source(self) -> str:
        return self.path.read_text()

    def instantiate(self, point: dict[str, Any]) -> str:
        """The kernel's source with TUNABLES set to `point` (validated against the search space)."""
        return with_tunables(self.source, point, self.search_space, self.path)


def _literal_assignment(tree: ast.Module, name: str) -> ast.Assign | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node
    return None


def read_tunables(source: str, path: Path) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(TUNABLES, SEARCH_SPACE) of a reference kernel; KbEntryError when missing or inconsistent."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise KbEntryError(f"{path}: kernel: syntax error at line {exc.lineno}") from None
    values: dict[str, Any] = {}
    for name in ("TUNABLES", "SEARCH_SPACE"):
        node = _literal_assignment(tree, name)
        if node is None:
            raise KbEntryError(f"{path}: {name}: a reference kernel defines a module-level {name} dict literal")
        try:
            values[name] = ast.literal_eval(node.value)
        except ValueError:
            raise KbEntryError(f"{path}: {name}: must be a literal dict") from None
        if not isinstance(values[name], dict):
            raise KbEntryError(f"{path}: {name}: must be a dict")
    tunables, space = values["TUNABLES"], values["SEARCH_SPACE"]
    for key, value in tunables.items():
        if key not in space or value not in space[key]:
            raise KbEntryError(f"{path}: TUNABLES: {key}={value!r} is not in SEARCH_SPACE[{key!r}]")
    return tunables, {k: list(v) for k, v in space.items()}


def with_tunables(source: str, point: dict[str, Any], space: dict[str, list[Any]], path: Path) -> str:
    """Replace the TUNABLES literal with `point` (every key of the space, values inside it)."""
    for key, value in point.items():
        if key not in space or value not in space[key]:
            raise KbEntryError(f"{path}: {key}={value!r} is outside the search space")
    tree = ast.parse(source)
    node = _literal_assignment(tree, "TUNABLES")
    assert node is not None and node.end_lineno is not None
    lines = source.splitlines(keepends=True)
    current = ast.literal_eval(node.value)
    merged = {**current, **point}
    replacement = "TUNABLES = " + repr(merged) + "\n"
    return "".join(lines[: node.lineno - 1]) + replacement + "".join(lines[node.end_lineno:])


def reference_kernels(kb: KnowledgeBase) -> list[ReferenceKernel]:
    """Every reference-kernel entry with its parsed tunables."""
    kernels = []
    for entry in sorted(kb.entries.values(), key=lambda e: e.id):
        if entry.kind != "reference-kernel" or entry.kernel_path is None:
            continue
        kernels.append(load_reference_kernel(entry))
    return kernels


def load_reference_kernel(entry: KbEntry) -> ReferenceKernel:
    assert entry.kernel_path is not None
    tunables, space = read_tunables(entry.kernel_path.read_text(), entry.kernel_path)
    families = entry.scope_values("family")
    return ReferenceKernel(entry.id, entry.kernel_path, entry.scope_values("ops"), families[0] if families else "",
                           tunables, space)


def kernels_for_op(kb: KnowledgeBase, op: str) -> list[ReferenceKernel]:
    return [k for k in reference_kernels(kb) if op in k.ops]
