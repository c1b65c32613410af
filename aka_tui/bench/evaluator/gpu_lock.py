"""An exclusive per-GPU lock, so two timed evaluations never share a GPU (across aka processes too)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from aka_tui.paths import aka_home


def gpu_identity(parent_index: int) -> str:
    """A stable name for a parent-visible GPU: its UUID when torch reports one, else host + PCI bus id."""
    import torch

    props = torch.cuda.get_device_properties(parent_index)
    uuid = getattr(props, "uuid", None)
    if uuid:
        return f"gpu-{uuid}"
    bus = getattr(props, "pci_bus_id", None)
    return f"gpu-{os.uname().nodename}-{bus if bus is not None else parent_index}"


@contextlib.contextmanager
def exclusive_gpu(identity: str, directory: Path | None = None) -> Iterator[Path]:
    """Hold `identity`'s lock file for the duration (blocks while another process holds it)."""
    folder = directory or aka_home() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{identity.replace('/', '_')}.lock"
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield path
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
