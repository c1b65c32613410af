"""A knowledge-base kernel with no suite problem runs as its own semantics: imported under Triton's interpreter,
with the example arguments its Model declares."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import torch


def import_interpreted(path: Path) -> ModuleType:
    """A kernel file imported with Triton's interpreter: its kernels then run on the CPU probe inputs (and on
    CUDA ones, copied through the host) in any session, and a wrong trial mapping raises in Python instead of
    ending a CUDA context. `@triton.jit` reads TRITON_INTERPRET when each kernel is defined, so setting it for
    the import is enough; the session's own candidates are unaffected."""
    from aka_tui.bench.problem.module_loading import import_file

    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        return import_file(path, "kb_kernel")
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous


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
