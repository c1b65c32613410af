"""`ast.parse` and `ast.literal_eval` that are safe to call from several threads on CPython 3.11.

CPython 3.11 converts a parsed tree to `ast` nodes with interpreter-wide state: a garbage collection
during one thread's `ast.parse` can run a finalizer that switches to another thread's `ast.parse`, and
one of them fails with "SystemError: AST constructor recursion depth mismatch" (a two-thread reproducer
fails on 3.11.7, not on 3.12.1). `LocalExecutor` runs the static scan in its worker threads, so every
parse in the package goes through this lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

PARSE_LOCK = threading.RLock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with PARSE_LOCK:
        return ast.parse(source, filename=filename)


def parse_error_text(exc: SyntaxError | ValueError) -> str:
    """One line for a source that does not parse: "syntax error at line N: why" (no line where Python gives none,
    as for null bytes, which some Pythons raise as ValueError)."""
    line = getattr(exc, "lineno", None)
    return f"syntax error{f' at line {line}' if line else ''}: {getattr(exc, 'msg', exc)}"


def literal_eval(node_or_source: Any) -> Any:
    with PARSE_LOCK:
        return ast.literal_eval(node_or_source)
