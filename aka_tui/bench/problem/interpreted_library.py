"""Triton's library functions interpreted inside an interpreted kernel, in a process whose Triton compiles."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_LIBRARY_LOCK = threading.RLock()


@contextlib.contextmanager
def library_interpreted() -> Iterator[None]:
    """Triton's own library functions (`tl.sum`, `tl.cdiv`, `tl.sigmoid`, ...) are `@jit` functions made when
    `triton.language` was first imported: compiled ones unless TRITON_INTERPRET was set then, as it is not in
    a session on a GPU. An interpreted kernel that calls one would fail ("Cannot call @triton.jit'd outside of
    the scope of a kernel"); while it runs, such a call is interpreted as the interpreter does its own device
    functions. Compiled kernels never call `JITFunction.__call__` (the compiler inlines them), so nothing else
    changes."""
    from triton.runtime import interpreter
    from triton.runtime.interpreter import InterpretedFunction, _patch_lang
    from triton.runtime.jit import JITFunction

    with _LIBRARY_LOCK:
        original = JITFunction.__call__
        tensor_patch: Any = getattr(interpreter, "_patch_lang_tensor", None)
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

        def patch_tensor(tensor: Any, scope: Any) -> None:
            # Triton 3.6 converts a scalar argument to an index with int() of its one-element array, which
            # NumPy 2 refuses (`range(0, n)` over a kernel argument raises); 3.7 squeezes it first
            tensor_patch(tensor, scope)
            scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

        JITFunction.__call__ = call  # type: ignore[method-assign]
        if tensor_patch is not None:
            interpreter._patch_lang_tensor = patch_tensor
        try:
            yield
        finally:
            JITFunction.__call__ = original  # type: ignore[method-assign]
            if tensor_patch is not None:
                interpreter._patch_lang_tensor = tensor_patch
