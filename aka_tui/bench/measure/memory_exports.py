"""A tensor's memory handed to another array library inside the audited call is computing the audit cannot see.

NumPy (or any DLPack consumer) working on `x.numpy()` reaches no aten op, so a forward that computed the RMSNorm
with NumPy and copied the result with its own Triton kernel was real to the dispatch audit (`numpy_fallback`).
The launch recorder wraps the ways torch hands out its memory — `Tensor.numpy`, `Tensor.__array__` (what
`np.asarray(x)` calls), `Tensor.__dlpack__` (`np.from_dlpack(x)`) and `to_dlpack` (under each of its names) — and each
call made while the audit records, inside a kernel launch too (the interpreter hands its arguments to NumPy by
address; a pre-run hook is the candidate's code: `pre_run_hook_numpy_fallback`), is charged as computing. `torch._C.TensorBase`'s own `numpy` cannot be wrapped (an immutable type): reaching
it is left to the static scan. Values read to the host (`Tensor.tolist`, a storage's `tolist`) are counted, not
charged: honest kernels read small host values that way (sequence lengths, expert counts), and the audit charges
the count only where it reaches a quarter of the output (`audit.build_report`: a forward that computed in plain
Python on `tolist()`, `python_loop_fallback`).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

EXPORTS: tuple[tuple[Any, str], ...] = (
    (torch.Tensor, "numpy"), (torch.Tensor, "__array__"), (torch.Tensor, "__dlpack__"),
    (torch.utils.dlpack, "to_dlpack"), (torch, "to_dlpack"), (torch._C, "_to_dlpack"),  # one builtin, three names
)
CHARGED_AS = "memory handed to another library"
READBACKS: tuple[tuple[Any, str, Callable[[Any], int]], ...] = (
    (torch.Tensor, "tolist", lambda t: t.numel()),
    (torch.UntypedStorage, "tolist", lambda s: s.nbytes()),
    (torch.TypedStorage, "tolist", lambda s: s.size()),
)


def wrap_exports(current_audit: Callable[[], Any]) -> list[tuple[Any, str, Any]]:
    """Wrap each export; `current_audit()` is the recording audit mode or None. Returns what `unwrap` restores
    (the original, or None where the name was inherited: `Tensor.numpy` is `TensorBase`'s)."""
    originals = []
    for owner, name in EXPORTS:
        original = getattr(owner, name, None)
        if original is None:
            continue

        def export(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            audit = current_audit()
            if audit is not None and not audit.paused:
                audit.compute[f"{CHARGED_AS}::{_name}"] += 1
            return _original(*args, **kwargs)

        originals.append((owner, name, original if name in vars(owner) else None))
        setattr(owner, name, export)
    for owner, name, size in READBACKS:
        original = getattr(owner, name, None)
        if original is None:
            continue

        def readback(this: Any, *args: Any, _original: Any = original, _size: Any = size, **kwargs: Any) -> Any:
            audit = current_audit()
            if audit is not None and not audit.paused:
                audit.readback += _size(this)
            return _original(this, *args, **kwargs)

        originals.append((owner, name, original if name in vars(owner) else None))
        setattr(owner, name, readback)
    return originals


def unwrap(originals: list[tuple[Any, str, Any]]) -> None:
    for owner, name, original in originals:
        if original is None:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
