"""Memory and task limits for one process tree through a cgroup of its own (v1 or v2), when one can be made.

A cgroup is the one limit the kernel enforces on a whole tree whatever its user (RLIMIT_NPROC does not bind
root, RLIMIT_AS breaks CUDA): memory (`memory.max` / `memory.limit_in_bytes`; past it the kernel's OOM
killer ends a process of the tree, not of the host) and tasks (`pids.max`; a fork fails past it). It also
names every process of the tree, setsid'd ones included, so they can all be killed. The cgroup is made under
the caller's own cgroup; where that is not writable (a container, a v2 parent holding processes) `create`
returns None and the caller falls back to its watchdog.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

_COUNTER = itertools.count()
PREFIX = "aka-sandbox-"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root, fstype, super options) of every cgroup mount of this process."""
    found = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[4], fields[3], tail[0], set(tail[2].split(","))))
    return found


def _own_dir(mount: str, root: str, cgroup_path: str) -> Path:
    relative = cgroup_path[len(root):] if root != "/" and cgroup_path.startswith(root) else cgroup_path
    return Path(mount) / relative.lstrip("/")


def _own_paths() -> dict[str, str]:
    """controller ('' for v2) → this process's cgroup path, from /proc/self/cgroup."""
    paths = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    return paths


def _remove_stale(parent: Path) -> None:
    """Empty cgroups left by aka processes that died without cleaning up."""
    try:
        children = [p for p in parent.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return
    for child in children:
        try:
            owner = int(child.name[len(PREFIX):].split("-")[0])
            os.kill(owner, 0)
        except ProcessLookupError:
            try:
                child.rmdir()
            except OSError:
                pass
        except (ValueError, PermissionError):
            pass


@dataclass
class TreeCgroup:
    """The cgroup(s) of one sandboxed tree: where its pid goes, what was limited, and how to read the outcome."""

    version: str  # "v2" or "v1"
    dirs: list[Path] = field(default_factory=list)
    memory_dir: Path | None = None
    pids_dir: Path | None = None

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended inside the cgroup."""
        if self.memory_dir is None:
            return 0
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        for line in _read(self.memory_dir / name).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def task_limit_hits(self) -> int:
        """How many forks the task limit refused."""
        if self.pids_dir is None:
            return 0
        for line in _read(self.pids_dir / "pids.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit():
                return int(value)
        return 0

    def pids(self) -> list[int]:
        found: set[int] = set()
        for d in self.dirs:
            found.update(int(p) for p in _read(d / "cgroup.procs").split() if p.isdigit())
        return sorted(found)

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (repeated: a process may fork while the list is read)."""
        if self.version == "v2" and self.dirs and _write(self.dirs[0] / "cgroup.kill", "1"):
            return
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Remove the (emptied) cgroup directories."""
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def create(memory_bytes: int | None, tasks: int | None) -> TreeCgroup | None:
    """A fresh cgroup with these limits under this process's own one, or None where that is not possible."""
    if os.environ.get("AKA_SANDBOX_CGROUPS", "1") == "0":
        return None
    name = f"{PREFIX}{os.getpid()}-{next(_COUNTER)}"
    mounts, own = _mounts(), _own_paths()
    v2 = next((m for m in mounts if m[2] == "cgroup2"), None)
    if v2 is not None and "" in own:
        made = _create_v2(_own_dir(v2[0], v2[1], own[""]), name, memory_bytes, tasks)
        if made is not None:
            return made
    return _create_v1(mounts, own, name, memory_bytes, tasks)


def _create_v2(parent: Path, name: str, memory_bytes: int | None, tasks: int | None) -> TreeCgroup | None:
    enabled = set(_read(parent / "cgroup.subtree_control").split())
    if not {"memory", "pids"} <= enabled:
        _write(parent / "cgroup.subtree_control", "+memory +pids")  # refused while the parent holds processes
        enabled = set(_read(parent / "cgroup.subtree_control").split())
    if not {"memory", "pids"} <= enabled:
        return None
    _remove_stale(parent)
    path = parent / name
    try:
        path.mkdir()
    except OSError:
        return None
    group = TreeCgroup("v2", [path], path, path)
    ok = (memory_bytes is None or _write(path / "memory.max", str(memory_bytes))) and \
        (tasks is None or _write(path / "pids.max", str(tasks)))
    _write(path / "memory.swap.max", "0")
    if not ok:
        group.remove()
        return None
    return group


def _create_v1(mounts: list[tuple[str, str, str, set[str]]], own: dict[str, str], name: str,
               memory_bytes: int | None, tasks: int | None) -> TreeCgroup | None:
    group = TreeCgroup("v1")
    for controller, limit, files in (("memory", memory_bytes, ("memory.limit_in_bytes",)),
                                     ("pids", tasks, ("pids.max",))):
        if limit is None:
            continue
        mount = next((m for m in mounts if m[2] == "cgroup" and controller in m[3]), None)
        if mount is None or controller not in own:
            continue
        parent = _own_dir(mount[0], mount[1], own[controller])
        _remove_stale(parent)
        path = parent / name
        try:
            path.mkdir()
        except OSError:
            continue
        if not all(_write(path / f, str(limit)) for f in files):
            TreeCgroup("v1", [path]).remove()
            continue
        if controller == "memory":
            _write(path / "memory.memsw.limit_in_bytes", str(limit))  # no swap beyond the limit, where swap exists
            group.memory_dir = path
        else:
            group.pids_dir = path
        group.dirs.append(path)
    return group if group.dirs else None
