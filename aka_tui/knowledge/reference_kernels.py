"""Reference kernels of the knowledge base: their tunables, search space, and instantiation at a point.

A reference kernel is a complete candidate file with two module-level dict literals, `TUNABLES` and
`SEARCH_SPACE`; instantiating it at a point rewrites the `TUNABLES` literal and nothing else. An optional
third literal, `INERT`, names tunables that do not change the launched kernel under given settings of
others (e.g. `{"BLOCK_N": {"ONE_PASS": [True]}}`: with a single-tile row, the loop's chunk size is unused),
so the offline search neither spends an evaluation on them nor counts two such points as different. An
optional `ACCURACY_STEPS` list names settings that make the kernel more exact at some cost (e.g.
`[{"UPCAST": 1}]`: fp8 tiles widened to fp16 before the dot), tried in order when the defaults are wrong;
`ACCURACY_NEEDS_GPU = True` beside it says the defaults' error shows only in a GPU's arithmetic (fp8
tensor-core accumulation, which the CPU interpreter computes exactly), so a session on the interpreter starts
from the steps.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aka_tui.safe_ast as safe_ast
from aka_tui.errors import KbEntryError
from aka_tui.knowledge.entry import KbEntry, read_text_file
from aka_tui.knowledge.store import KnowledgeBase


@dataclass(frozen=True)
class ReferenceKernel:
    entry_id: str
    path: Path
    ops: tuple[str, ...]
    family: str
    tunables: dict[str, Any]
    search_space: dict[str, list[Any]]
    inert: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    accuracy_steps: tuple[dict[str, Any], ...] = ()  # more exact settings, each on top of the ones before
    text: str | None = None  # the source when it is not the file at `path` (a transferred or seeded kernel)
    origin: str = "kb"  # the path that produced it: kb, transfer, compiler-seed or person
    accuracy_needs_gpu: bool = False  # the defaults' error shows only on a GPU (ACCURACY_NEEDS_GPU)

    def is_inert(self, param: str, point: dict[str, Any]) -> bool:
        """True when `param` has no effect at `point` (every condition of its INERT rule holds)."""
        conditions = self.inert.get(param)
        return bool(conditions) and all(point.get(k) in values for k, values in (conditions or {}).items())

    def canonical(self, point: dict[str, Any]) -> dict[str, Any]:
        """`point` with every inert tunable reset to its default: equal canonical points launch the same kernel."""
        return {k: (self.tunables.get(k, v) if self.is_inert(k, point) else v) for k, v in point.items()}

    @property
    def source(self) -> str:
        return self.text if self.text is not None else read_text_file(self.path)

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
        tree = safe_ast.parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, on Pythons that do not call them syntax
        raise KbEntryError(f"{path}: kernel: {safe_ast.parse_error_text(exc)}") from None
    values: dict[str, Any] = {}
    for name in ("TUNABLES", "SEARCH_SPACE"):
        node = _literal_assignment(tree, name)
        if node is None:
            raise KbEntryError(f"{path}: {name}: a reference kernel defines a module-level {name} dict literal")
        try:
            values[name] = safe_ast.literal_eval(node.value)
        except ValueError:
            raise KbEntryError(f"{path}: {name}: must be a literal dict") from None
        if not isinstance(values[name], dict):
            raise KbEntryError(f"{path}: {name}: must be a dict")
    tunables, space = values["TUNABLES"], values["SEARCH_SPACE"]
    for key, value in tunables.items():
        if key not in space or value not in space[key]:
            raise KbEntryError(f"{path}: TUNABLES: {key}={value!r} is not in SEARCH_SPACE[{key!r}]")
    return tunables, {k: list(v) for k, v in space.items()}


def read_inert(source: str, path: Path, space: dict[str, list[Any]]) -> dict[str, dict[str, list[Any]]]:
    """The optional INERT literal: {param: {other_param: [values under which param has no effect]}}."""
    node = _literal_assignment(safe_ast.parse(source), "INERT")
    if node is None:
        return {}
    try:
        inert = safe_ast.literal_eval(node.value)
    except ValueError:
        raise KbEntryError(f"{path}: INERT: must be a literal dict") from None
    if not isinstance(inert, dict):
        raise KbEntryError(f"{path}: INERT: must be a dict {{param: {{other_param: [values]}}}}")
    for param, conditions in inert.items():
        if param not in space:
            raise KbEntryError(f"{path}: INERT: {param!r} is not in SEARCH_SPACE")
        if not isinstance(conditions, dict) or not conditions:
            raise KbEntryError(f"{path}: INERT[{param!r}]: must be a non-empty dict {{other_param: [values]}}")
        for other, values in conditions.items():
            if other not in space or other == param:
                raise KbEntryError(f"{path}: INERT[{param!r}]: condition on {other!r}, which is not another "
                                   "tunable of SEARCH_SPACE")
            if not isinstance(values, (list, tuple)) or any(v not in space[other] for v in values):
                raise KbEntryError(f"{path}: INERT[{param!r}][{other!r}]: must list values of "
                                   f"SEARCH_SPACE[{other!r}]")
    return {p: {k: list(v) for k, v in c.items()} for p, c in inert.items()}


def read_accuracy_steps(source: str, path: Path, space: dict[str, list[Any]]) -> tuple[dict[str, Any], ...]:
    """The optional ACCURACY_STEPS literal: [{param: value, ...}, ...], values from the search space."""
    node = _literal_assignment(safe_ast.parse(source), "ACCURACY_STEPS")
    if node is None:
        return ()
    try:
        steps = safe_ast.literal_eval(node.value)
    except ValueError:
        raise KbEntryError(f"{path}: ACCURACY_STEPS: must be a literal list") from None
    if not isinstance(steps, (list, tuple)) or not all(isinstance(step, dict) and step for step in steps):
        raise KbEntryError(f"{path}: ACCURACY_STEPS: must be a list of non-empty dicts {{param: value}}")
    for step in steps:
        for param, value in step.items():
            if value not in space.get(param, []):
                raise KbEntryError(f"{path}: ACCURACY_STEPS: {param}={value!r} is not a point of SEARCH_SPACE")
    return tuple(dict(step) for step in steps)


def read_accuracy_needs_gpu(source: str, path: Path, steps: tuple[dict[str, Any], ...]) -> bool:
    """The optional ACCURACY_NEEDS_GPU literal: True or False, and True only beside ACCURACY_STEPS."""
    node = _literal_assignment(safe_ast.parse(source), "ACCURACY_NEEDS_GPU")
    if node is None:
        return False
    try:
        value = safe_ast.literal_eval(node.value)
    except ValueError:
        value = None
    if not isinstance(value, bool):
        raise KbEntryError(f"{path}: ACCURACY_NEEDS_GPU: must be True or False")
    if value and not steps:
        raise KbEntryError(f"{path}: ACCURACY_NEEDS_GPU: needs ACCURACY_STEPS (the settings to start from)")
    return value


def with_tunables(source: str, point: dict[str, Any], space: dict[str, list[Any]], path: Path) -> str:
    """Replace the TUNABLES literal with `point` (every key of the space, values inside it)."""
    for key, value in point.items():
        if key not in space or value not in space[key]:
            raise KbEntryError(f"{path}: {key}={value!r} is outside the search space")
    tree = safe_ast.parse(source)
    node = _literal_assignment(tree, "TUNABLES")
    assert node is not None and node.end_lineno is not None
    lines = source.splitlines(keepends=True)
    current = safe_ast.literal_eval(node.value)
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
    source = read_text_file(entry.kernel_path)
    tunables, space = read_tunables(source, entry.kernel_path)
    families = entry.scope_values("family")
    steps = read_accuracy_steps(source, entry.kernel_path, space)
    return ReferenceKernel(entry.id, entry.kernel_path, entry.scope_values("ops"), families[0] if families else "",
                           tunables, space, read_inert(source, entry.kernel_path, space), steps,
                           accuracy_needs_gpu=read_accuracy_needs_gpu(source, entry.kernel_path, steps))


def kernels_for_op(kb: KnowledgeBase, op: str) -> list[ReferenceKernel]:
    """The op's reference kernels (only theirs are read: a broken kernel of another op does not matter here)."""
    return [load_reference_kernel(e) for e in sorted(kb.entries.values(), key=lambda e: e.id)
            if e.kind == "reference-kernel" and e.kernel_path is not None and op in e.scope_values("ops")]


def kernel_from_source(source: str, path: Path, entry_id: str, origin: str, family: str = "") -> ReferenceKernel:
    """A tunable kernel from a source text that declares TUNABLES / SEARCH_SPACE (a person's or a generated
    one); KbEntryError naming `path` when it does not."""
    tunables, space = read_tunables(source, path)
    steps = read_accuracy_steps(source, path, space)
    return ReferenceKernel(entry_id, path, (), family, tunables, space, read_inert(source, path, space), steps,
                           source, origin, read_accuracy_needs_gpu(source, path, steps))
