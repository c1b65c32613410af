"""Whether a kernel module reads its TUNABLES at call time, so that a configuration applied in place reaches
the launch.

The sweep applies a configuration with `module.TUNABLES.clear(); module.TUNABLES.update(cfg)`. That works for
launchers that look TUNABLES up when called (`TUNABLES[...]` in a function body, or `cfg=TUNABLES` as a default
argument, which is the same dict object). `binding_warnings` lists the ways a kernel could miss it: code that
reads TUNABLES at import (module or class level, a default argument computed from it), a function rebinding the
global, or a default argument holding a copy.
"""

from __future__ import annotations

import ast
from types import ModuleType
from typing import Any

import aka_tui.safe_ast as safe_ast


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def binding_warnings(source: str, module: ModuleType) -> list[str]:
    """Ways a kernel could ignore TUNABLES changed in place (empty: every read happens at call time).

    Static: module- or class-level code reading TUNABLES at import, default arguments computed from it,
    functions rebinding it. Dynamic: a default argument that equals TUNABLES but is another dict (a copy).
    """
    warnings = _static_warnings(safe_ast.parse(source))
    live = getattr(module, "TUNABLES", None)
    if not isinstance(live, dict):
        warnings.append("the module has no TUNABLES dict after import")
        return warnings
    return warnings + _copied_defaults(module, live)


def _static_warnings(tree: ast.Module) -> list[str]:
    """Reads of TUNABLES at import and rebindings of it, from the module's source."""
    warnings: list[str] = []
    assigned = 0
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TUNABLES" for t in node.targets):
            assigned += 1
            if assigned > 1:
                warnings.append(f"line {node.lineno}: TUNABLES is assigned again at module level")
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            warnings += _function_warnings(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    warnings += _function_warnings(item, f"{node.name}.")
                elif _mentions(item, "TUNABLES"):
                    warnings.append(f"line {item.lineno}: class {node.name} reads TUNABLES at import")
        elif _mentions(node, "TUNABLES") and not (isinstance(node, ast.Assign) and _is_search_space(node)):
            warnings.append(f"line {node.lineno}: module-level code reads TUNABLES at import")
    return warnings


def _function_warnings(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str = "") -> list[str]:
    """A default argument computed from TUNABLES (at import), or a `global TUNABLES` rebinding it."""
    warnings: list[str] = []
    label = f"{owner}{fn.name}()"
    for default in [*fn.args.defaults, *[d for d in fn.args.kw_defaults if d is not None]]:
        if _mentions(default, "TUNABLES") and not (isinstance(default, ast.Name) and default.id == "TUNABLES"):
            warnings.append(f"line {default.lineno}: a default argument of {label} is computed from TUNABLES "
                            "at import")
    for node in ast.walk(fn):
        if isinstance(node, ast.Global) and "TUNABLES" in node.names:
            warnings.append(f"line {node.lineno}: {label} rebinds the global TUNABLES")
    return warnings


def _copied_defaults(module: ModuleType, live: dict[str, Any]) -> list[str]:
    """Functions of the imported module whose default argument equals TUNABLES but is another dict."""
    warnings: list[str] = []
    for name, obj in vars(module).items():
        for fn in _functions_of(obj):
            defaults = list(getattr(fn, "__defaults__", None) or ()) + list((getattr(fn, "__kwdefaults__", None) or {}).values())
            if any(isinstance(d, dict) and d is not live and d == live for d in defaults):
                warnings.append(f"{getattr(fn, '__qualname__', name)}() holds a copy of TUNABLES as a default argument")
    return warnings


def _is_search_space(node: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id in ("SEARCH_SPACE", "INERT") for t in node.targets)


def _functions_of(obj: Any) -> list[Any]:
    if isinstance(obj, type):
        return [v for v in vars(obj).values() if callable(v) and hasattr(v, "__defaults__")]
    if callable(obj) and hasattr(obj, "__defaults__"):
        return [obj]
    return []
