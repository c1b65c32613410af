"""Tamper detection: snapshot the functions the harness relies on before the candidate is imported.

Timers (time.*, CUDA events, synchronize, triton.testing.do_bench), the torch functions the comparison
uses, and our own bench modules are recorded by identity; any replacement afterwards is `tampered`.
Background threads left running by a forward are detected the same way (a thread census).
"""

from __future__ import annotations

import threading
import time
from types import ModuleType
from typing import Any


def _watched_namespaces() -> list[tuple[str, Any]]:
    import torch
    import torch.nn.functional as functional

    spaces: list[tuple[str, Any]] = [
        ("time", time), ("torch", torch), ("torch.Tensor", torch.Tensor), ("torch.nn.functional", functional),
        ("torch.cuda", torch.cuda), ("torch.cuda.Event", torch.cuda.Event), ("torch.cuda.Stream", torch.cuda.Stream),
        ("threading", threading),
    ]
    try:
        import triton.testing

        spaces.append(("triton.testing", triton.testing))
    except ImportError:
        pass
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("aka_tui.bench") and isinstance(module, ModuleType):
            spaces.append((name, module))
    return spaces


def _underlying(value: Any) -> Any:
    """Bound methods (classmethods) are new objects on every access: compare their function."""
    return getattr(value, "__func__", value)


class IntegritySnapshot:
    """Identity of every callable attribute of the watched namespaces at capture time."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], int] = {}
        self.objects: dict[tuple[str, str], Any] = {}
        for space_name, space in _watched_namespaces():
            for attr in dir(space):
                if attr.startswith("__") and attr not in ("__eq__", "__getitem__", "__torch_function__"):
                    continue
                try:
                    value = getattr(space, attr)
                except Exception:  # lazy attributes that fail to resolve are not watched
                    continue
                if callable(value):
                    value = _underlying(value)
                    self.entries[(space_name, attr)] = id(value)
                    self.objects[(space_name, attr)] = value  # keep alive so ids stay unique

    def changed(self) -> list[str]:
        """`namespace.attr` names whose object is no longer the captured one."""
        spaces = dict(_watched_namespaces())
        changed = []
        for (space_name, attr), ident in self.entries.items():
            space = spaces.get(space_name)
            if space is None:
                continue
            try:
                value = getattr(space, attr)
            except Exception:
                changed.append(f"{space_name}.{attr}")
                continue
            if id(_underlying(value)) != ident:
                changed.append(f"{space_name}.{attr}")
        return sorted(changed)


class ThreadStartCounter:
    """Counts `threading.Thread.start` calls (installed by the worker before any candidate code runs).

    A thread that starts and finishes inside forward is invisible to a census; its start is not.
    """

    def __init__(self) -> None:
        self.started: list[str] = []
        original = threading.Thread.start
        counter = self

        def start(thread: threading.Thread) -> None:
            counter.started.append(thread.name)
            original(thread)

        threading.Thread.start = start  # type: ignore[method-assign]

    def mark(self) -> int:
        return len(self.started)

    def since(self, mark: int) -> list[str]:
        return self.started[mark:]


def thread_census() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


def new_threads(before: set[int]) -> list[str]:
    """Names of live threads that did not exist in `before`."""
    return sorted(t.name for t in threading.enumerate() if t.ident not in before and t.is_alive())
