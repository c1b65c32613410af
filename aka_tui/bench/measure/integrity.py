"""Tamper detection: snapshot the functions the harness relies on before the candidate is imported.

Timers (time.*, CUDA events, synchronize, triton.testing.do_bench), the torch functions the comparison
uses, our own bench modules and the standard-library modules they import (`statistics`, `math`, `hmac`...), the methods and properties of the classes they define, and the code objects of
all of these are recorded by identity; any replacement afterwards (or a name added to one of our classes) is
`tampered`.
The dispatcher's kernels for aten's operators are snapshotted too (`dispatch_table.py`): a kernel registered below
Python changes what the harness's own torch calls compute without replacing a callable; so are torch's mode stacks
and the interpreter's trace and profile functions.
Background threads left running by a forward are detected the same way (a thread census).
"""

from __future__ import annotations

import _thread
import builtins
import threading
import time
from types import ModuleType
from typing import Any

from aka_tui.bench.measure.dispatch_table import DispatcherSnapshot


def _watched_namespaces() -> list[tuple[str, Any]]:
    import torch
    import torch.nn.functional as functional

    spaces: list[tuple[str, Any]] = [
        ("time", time), ("torch", torch), ("torch.Tensor", torch.Tensor), ("torch.nn.functional", functional),
        ("torch.cuda", torch.cuda), ("torch.cuda.Event", torch.cuda.Event), ("torch.cuda.Stream", torch.cuda.Stream),
        ("threading", threading), ("_thread", _thread),  # the raw thread start ThreadStartCounter counts
        ("builtins", builtins),  # `sorted` orders the timed calls' times; `isinstance`/`type` judge the outputs
    ]
    try:
        import triton.testing
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        spaces += [("triton.testing", triton.testing), ("triton.runtime.jit.JITFunction", JITFunction),
                   ("triton.runtime.interpreter.InterpretedFunction", InterpretedFunction)]  # the launch recorder
    except ImportError:
        pass
    import sys

    imported: dict[str, ModuleType] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("aka_tui.bench") and isinstance(module, ModuleType):
            spaces.append((name, module))
            imported.update((value.__name__, value) for value in list(vars(module).values())
                            if isinstance(value, ModuleType) and _is_stdlib(value.__name__))
    # the modules whose globals the inherited methods call through (TorchDispatchMode.__enter__ calls `_push_mode`)
    for base in _inherited_bases():
        defining = sys.modules.get(base.__module__)
        if isinstance(defining, ModuleType) and base.__module__ not in {name for name, _ in spaces}:
            spaces.append((base.__module__, defining))
    # the standard library our modules call through their module (`statistics.median` takes the timed median)
    watched = {name for name, _ in spaces} | _UNWATCHED_STDLIB
    spaces += [(name, module) for name, module in sorted(imported.items()) if name not in watched]
    return spaces


# `sys` holds hooks that tools install (excepthook, displayhook); its trace and profile functions are compared
# by `_global_hooks`. `builtins` is watched on its own (above).
_UNWATCHED_STDLIB = frozenset({"sys"})
# Dunder names are skipped (a class's operators), except these: the tensor's comparisons and torch's function
# hook, and the builtins every import and class statement calls through.
_WATCHED_DUNDERS = ("__eq__", "__getitem__", "__torch_function__", "__import__", "__build_class__")


def _is_stdlib(module_name: str) -> bool:
    import sys

    return module_name.split(".")[0] in sys.stdlib_module_names


def _underlying(value: Any) -> Any:
    """Bound methods (classmethods) are new objects on every access: compare their function."""
    return getattr(value, "__func__", value)


def _identity(value: Any) -> tuple[int, ...]:
    """The object's id, and its code's when it has one (replacing `f.__code__` keeps the function object)."""
    value = _underlying(value)
    code = getattr(value, "__code__", None)
    return (id(value), id(code)) if code is not None else (id(value),)


def _class_members(cls: type) -> dict[str, Any]:
    """The callables and descriptors a class defines itself (methods, properties, static/class methods)."""
    members: dict[str, Any] = {}
    for name, value in vars(cls).items():
        if isinstance(value, property):
            for part in ("fget", "fset", "fdel"):
                if getattr(value, part) is not None:
                    members[f"{name}.{part}"] = getattr(value, part)
            members[name] = value
        elif isinstance(value, (staticmethod, classmethod)) or callable(value):
            members[name] = value
    return members


DYNAMO = "torch._dynamo"


class CompilerImportedLate(BaseException):
    """The candidate imported torch._dynamo after the snapshot; importing it rewraps torch functions (e.g.
    `torch.manual_seed`), which would read as tampering. The worker exits and the parent re-runs the rest with
    dynamo imported before the snapshot. A BaseException, so no `except Exception` on the way swallows it."""


class IntegritySnapshot:
    """Identity of every callable of the watched namespaces at capture time, of the methods and properties of
    the classes our bench modules define (and the names each class defines), and of their functions' code; the
    dispatcher's aten kernels."""

    def __init__(self) -> None:
        import sys

        self.dynamo_loaded = DYNAMO in sys.modules
        self.entries: dict[tuple[str, str], tuple[int, ...]] = {}
        self.objects: dict[tuple[str, str], Any] = {}
        self.class_names: dict[str, frozenset[str]] = {}
        for key, value in _watched_items():
            self.entries[key] = _identity(value)
            self.objects[key] = (_underlying(value), getattr(_underlying(value), "__code__", None))  # keep alive
        for qualname, cls in _harness_classes():
            self.class_names[qualname] = frozenset(vars(cls))
        self.dispatcher = DispatcherSnapshot()
        self.hooks = _global_hooks()

    def dynamo_arrived(self) -> bool:
        """torch._dynamo was imported after the snapshot (by the candidate: the harness imports it before)."""
        import sys

        return not self.dynamo_loaded and DYNAMO in sys.modules

    def changed(self) -> list[str]:
        """`namespace.attr` names whose object (or code) is no longer the captured one; classes with new names."""
        now = dict(_watched_items())
        changed = []
        for key, ident in self.entries.items():
            value = now.get(key)
            if value is None:
                if key[0] in _present_spaces():
                    changed.append(f"{key[0]}.{key[1]}")
                continue
            if _identity(value) != ident:
                changed.append(f"{key[0]}.{key[1]}")
        for qualname, cls in _harness_classes():
            added = frozenset(vars(cls)) - self.class_names.get(qualname, frozenset(vars(cls)))
            changed.extend(f"{qualname}.{name}" for name in sorted(added))
        changed.extend(self.dispatcher.changed())
        now_hooks = _global_hooks()
        changed.extend(name for name, value in self.hooks.items() if now_hooks[name] != value)
        return sorted(set(changed))


def _global_hooks() -> dict[str, Any]:
    """Interpreter- and torch-wide hooks that see every call the harness makes: a dispatch or function mode left on
    torch's stacks (a resident mode under the aten audit answers ops the audit allows, and the ops it runs
    meanwhile are seen by no mode), trace or profile functions (which are handed the harness's frames), and signal
    handlers and interval timers (a handler runs candidate code between any two of the harness's bytecodes: after
    the audited call has returned, it could finish the outputs the comparison then reads)."""
    import signal
    import sys

    import torch

    hooks: dict[str, Any] = {
        "torch dispatch modes": torch._C._len_torch_dispatch_stack(),
        "torch function modes": torch._C._len_torch_function_stack(),
        "sys.settrace": sys.gettrace(), "sys.setprofile": sys.getprofile(),
        "threading.settrace": threading.gettrace(), "threading.setprofile": threading.getprofile()}
    for number in sorted(signal.valid_signals()):
        try:
            hooks[f"signal handler {_signal_name(number)}"] = signal.getsignal(number)
        except (OSError, ValueError):  # a signal this platform will not report
            continue
    for timer in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
        which = getattr(signal, timer, None)
        if which is not None:
            hooks[f"interval timer {timer}"] = signal.getitimer(which) != (0.0, 0.0)
    return hooks


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal: a number only
        return str(number)


def _present_spaces() -> set[str]:
    return {name for name, _ in _watched_namespaces()}


_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: built-in classes, whose attributes cannot be set


def _own_classes() -> list[tuple[str, type]]:
    """Classes defined in our bench modules (the evaluator's own code)."""
    import sys

    found: list[tuple[str, type]] = []
    for name, module in list(sys.modules.items()):
        if not (name.startswith("aka_tui.bench") and isinstance(module, ModuleType)):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == name:
                found.append((f"{name}.{attr}", value))
    return found


def _inherited_bases(own: list[tuple[str, type]] | None = None) -> list[type]:
    """The classes our classes inherit from, built-in ones aside (they cannot change)."""
    bases: dict[type, None] = {}
    for _, cls in own if own is not None else _own_classes():
        for base in cls.__mro__[1:]:
            if not base.__flags__ & _IMMUTABLE_TYPE and not base.__module__.startswith("aka_tui.bench"):
                bases.setdefault(base)
    return list(bases)


def _harness_classes() -> list[tuple[str, type]]:
    """Classes defined in our bench modules, and the classes they inherit from: the aten audit's `with` is
    `TorchDispatchMode.__enter__` (a candidate that made it a no-op was never audited: `disabled_dispatch_mode_entry`;
    the module it calls `_push_mode` through is watched by `_watched_namespaces`)."""
    own = _own_classes()
    return own + [(f"{base.__module__}.{base.__qualname__}", base) for base in _inherited_bases(own)]


def _watched_items() -> list[tuple[tuple[str, str], Any]]:
    items: list[tuple[tuple[str, str], Any]] = []
    for space_name, space in _watched_namespaces():
        for attr in dir(space):
            if attr.startswith("__") and attr not in _WATCHED_DUNDERS:
                continue
            try:
                value = getattr(space, attr)
            except Exception:  # lazy attributes that fail to resolve are not watched
                continue
            if callable(value):
                items.append(((space_name, attr), value))
    for qualname, cls in _harness_classes():
        for member, value in _class_members(cls).items():
            items.append(((qualname, member), value))
    return items


class ThreadStartCounter:
    """Counts the threads and processes a candidate starts (installed by the worker before any candidate code runs).

    A thread that starts and finishes inside forward is invisible to a census; its start is not. Counted:
    `threading.Thread.start`, the interpreter's raw thread starts below it (`_thread.start_new_thread`, also as
    `threading._start_new_thread`: such a thread is no `threading.Thread`, so `threading.enumerate` never lists it)
    and every fork (`os.register_at_fork`, which nothing can unregister). Torch's dispatch modes are per thread and
    the audit watches the worker's process only, so work done in either is unaudited (`raw_thread_fallback`,
    `forked_child_fallback`). No honest kernel forks: `since` lists every fork since the counter was installed, the
    candidate's import included (a helper forked then could serve every call through shared memory).
    """

    def __init__(self) -> None:
        import os

        self.started: list[str] = []
        self.forks: list[str] = []
        original = threading.Thread.start
        raw_start = _thread.start_new_thread
        counter = self

        def start(thread: threading.Thread) -> None:
            counter.started.append(thread.name)
            original(thread)

        def start_new_thread(function: Any, *args: Any, **kwargs: Any) -> int:
            owner = getattr(function, "__self__", None)
            counter.started.append(owner.name if isinstance(owner, threading.Thread)
                                   else f"raw thread {getattr(function, '__qualname__', function)!r}")
            return raw_start(function, *args, **kwargs)

        threading.Thread.start = start  # type: ignore[method-assign,assignment]
        _thread.start_new_thread = _thread.start_new = start_new_thread  # type: ignore[attr-defined,assignment]
        threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]
        os.register_at_fork(before=lambda: counter.forks.append(f"forked process (pid {os.getpid()} forked)"))

    def mark(self) -> int:
        return len(self.started)

    def since(self, mark: int) -> list[str]:
        """Threads started since `mark`, and every fork so far."""
        return self.started[mark:] + self.forks


def thread_census() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


def new_threads(before: set[int]) -> list[str]:
    """Names of live threads that did not exist in `before`."""
    return sorted(t.name for t in threading.enumerate() if t.ident not in before and t.is_alive())
