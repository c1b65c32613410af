"""A knowledge-base kernel with no suite problem runs as its own semantics: imported under Triton's interpreter,
with the example arguments its Model declares."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from aka_tui.bench.problem.interpreted_library import library_interpreted


def import_interpreted(path: Path) -> ModuleType:
    """A kernel file imported with Triton's interpreter: its kernels then run on the CPU probe inputs (and on
    CUDA ones, copied through the host) in any session, and a wrong trial mapping raises in Python instead of
    ending a CUDA context. `@triton.jit` reads TRITON_INTERPRET when each kernel is defined, so setting it for
    the import makes the file's kernels interpreted; its Model's forward runs with Triton's library functions
    interpreted too (`library_interpreted`). The session's own candidates are unaffected."""
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
            with library_interpreted():
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
