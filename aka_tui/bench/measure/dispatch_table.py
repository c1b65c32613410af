"""Tamper detection below Python: the dispatcher's kernels for aten's operators.

The integrity snapshot (`integrity.py`) holds Python callables by identity; an aten kernel registered through the
dispatcher (`torch.library.Library("aten", "IMPL").impl(...)`, `torch._C._dispatch_library`, a loaded extension's
`TORCH_LIBRARY_IMPL`) changes what `torch.sub`, `torch.empty` or a view computes without replacing any of them: the
worker's own comparisons could be made to agree, its poisoning fills to do nothing, and PyTorch work could hide
inside an op the aten audit allows. So the worker records, before the candidate is imported, the dispatcher's
description of every aten operator (`torch._C._dispatch_dump`: each dispatch key's kernel and where it was
registered, overridden kernels included) and which dispatch keys have a backend fallback; any difference later, and
any aten operator (or overload) that was not there, is tampering. Other namespaces are not watched: loading
torch's compiler or distributed modules registers kernels there, and a candidate's own operator is charged by the
audit as computing whatever its name.
"""

from __future__ import annotations

import torch

_ATEN = "aten::"


def _aten_ops() -> list[str]:
    return [name for name in torch._C._dispatch_get_all_op_names() if name.startswith(_ATEN)]


def _fallbacks() -> dict[str, bool]:
    keys = torch._C.DispatchKey.__members__
    return {name: bool(torch._C._dispatch_has_backend_fallback(key)) for name, key in keys.items()}


class DispatcherSnapshot:
    """Every aten operator's dispatcher entry and the backend fallbacks, at capture time."""

    def __init__(self) -> None:
        self.tables = {name: torch._C._dispatch_dump(name) for name in _aten_ops()}
        self.fallbacks = _fallbacks()

    def changed(self) -> list[str]:
        """`dispatcher aten::op` for each operator whose kernels changed or that is new; `dispatcher fallback KEY`
        for each dispatch key whose backend fallback came or went."""
        found = []
        for name in _aten_ops():
            before = self.tables.get(name)
            if before is None or torch._C._dispatch_dump(name) != before:
                found.append(f"dispatcher {name}")
        found.extend(f"dispatcher fallback {key}" for key, has in _fallbacks().items()
                     if has != self.fallbacks.get(key, has))
        return found
