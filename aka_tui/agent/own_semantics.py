"""A knowledge-base kernel with no suite problem runs as its own semantics: imported under Triton's interpreter,
with the example arguments its Model declares."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

_LIBRARY_LOCK = threading.RLock()


@contextlib.contextmanager
def _library_interpreted() -> Iterator[None]:
    """Triton's own library functions (`tl.sum`, `tl.cdiv`, `tl.sigmoid`, ...) are `@jit` functions made when
    `triton.language` was first imported: compiled ones unless TRITON_INTERPRET was set then, as it is not in
    a session on a GPU. An interpreted kernel that calls one would fail ("Cannot call @triton.jit'd outside of
    the scope of a kernel"); while it runs, such a call is interpreted as the interpreter does its own device
    functions. Compiled kernels never call `JITFunction.__call__` (the compiler inlines them), so nothing else
    changes."""
    from triton.runtime.interpreter import InterpretedFunction, _patch_lang
    from triton.runtime.jit import JITFunction

    with _LIBRARY_LOCK:
        original = JITFunction.__call__
        interpreted: dict[Any, Any] = {}

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            # as InterpretedFunction.__call__, but the language patches this call adds (to the modules the
            # library function sees, which the kernel's own do not) are undone after it: left in place, they
            # break every kernel the process compiles later
            if self.fn not in interpreted:
                interpreted[self.fn] = InterpretedFunction(self.fn)
            scope = _patch_lang(self.fn)
            try:
                return interpreted[self.fn].rewrite()(*args, **kwargs)
            finally:
                scope.restore()

        JITFunction.__call__ = call  # type: ignore[method-assign]
        try:
            yield
        finally:
            JITFunction.__call__ = original  # type: ignore[method-assign]


def import_interpreted(path: Path) -> ModuleType:
    """A kernel file imported with Triton's interpreter: its kernels then run on the CPU probe inputs (and on
    CUDA ones, copied through the host) in any session, and a wrong trial mapping raises in Python instead of
    ending a CUDA context. `@triton.jit` reads TRITON_INTERPRET when each kernel is defined, so setting it for
    the import makes the file's kernels interpreted; its Model's forward runs with Triton's library functions
    interpreted too (`_library_interpreted`). The session's own candidates are unaffected."""
    from aka_tui.bench.problem.module_loading import import_file

    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        module = import_file(path, "kb_kernel")
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    model = getattr(module, "Model", None)
    forward = getattr(model, "forward", None)
    if isinstance(model, type) and callable(forward):

        @functools.wraps(forward)
        def interpreted_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _library_interpreted():
                return forward(self, *args, **kwargs)

        setattr(model, "forward", interpreted_forward)  # noqa: B010 - Model is any class the file defines
    return module


def declared_examples(model_class: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(init, forward) examples a kernel's Model declares in `EXAMPLE_CALL` (used when no suite problem defines
    its interface): init values as they are, forward tensors as [dtype name, shape] (zeros: only kind, rank,
    dtype and sizes are read). Anything malformed is left out."""
    declared = getattr(model_class, "EXAMPLE_CALL", None)
    if not isinstance(declared, dict):
        return {}, {}
    init, calls = declared.get("init"), declared.get("forward")
    forward: dict[str, Any] = {}
    for name, spec in (calls.items() if isinstance(calls, dict) else []):
        if isinstance(spec, (bool, int, float, str)):
            forward[name] = spec
            continue
        if not (isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[0], str)
                and isinstance(spec[1], (list, tuple)) and all(isinstance(n, int) and n >= 0 for n in spec[1])):
            continue
        dtype = getattr(torch, spec[0], None)
        if isinstance(dtype, torch.dtype):
            forward[name] = torch.zeros(tuple(spec[1]), dtype=dtype)
    return (dict(init) if isinstance(init, dict) else {}), forward
