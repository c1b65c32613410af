"""A contained child process: limits set before it runs, a watchdog for what no cgroup bounds, the whole
process tree killed at the end, and a one-line verdict when a limit ended it.

Before the child's program starts, a small stdlib-only shim (no `preexec_fn`, which is unsafe in threaded
callers such as the TUI) asks for SIGKILL when its parent dies, raises its OOM score to the maximum (so the
host's OOM killer takes it before anything else), joins its cgroup, sets rlimits (CPU time, file size, no
core files; task count where no cgroup does it and the user is not root) and execs the program.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_tui.bench.sandbox import cgroups

GiB = 1 << 30
MiB = 1 << 20

_SHIM = r"""
import ctypes, json, os, resource, sys
spec = json.loads(sys.argv[1])
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: SIGKILL when the parent goes
    if os.getppid() != spec["parent"]:
        os._exit(125)
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:
        pass
    for path in spec["cgroups"]:
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
    for name, soft, hard in spec["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    os.execv(sys.argv[2], sys.argv[2:])
except BaseException as exc:
    try:  # never through a link a former worker in this work dir left in its place
        fd = os.open(spec["error_file"], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.write(fd, f"{type(exc).__name__}: {exc}".encode())
    except OSError:
        pass
    os._exit(126)
"""
SHIM_FAILED = 126


def fmt_bytes(value: float) -> str:
    """1 GiB, 512 MiB, 1.5 GiB."""
    if value >= GiB:
        return f"{value / GiB:.3g} GiB"
    return f"{value / MiB:.3g} MiB"


@dataclass(frozen=True)
class ResourceLimits:
    """What one contained process tree may use; None leaves a limit off."""

    memory_bytes: int | None = None  # resident memory of the whole tree
    cpu_s: float | None = None  # CPU time of each process (RLIMIT_CPU)
    tasks: int | None = None  # processes and threads of the tree
    file_bytes: int | None = None  # size of any one file written (RLIMIT_FSIZE)
    disk_bytes: int | None = None  # everything in the writable directories together
    cgroups: bool = True  # False: the watchdog alone bounds memory and tasks (as where no cgroup can be made)

    def describe(self) -> str:
        parts = []
        if self.memory_bytes:
            parts.append(f"memory {fmt_bytes(self.memory_bytes)}")
        if self.cpu_s:
            parts.append(f"CPU {self.cpu_s:.0f} s")
        if self.tasks:
            parts.append(f"{self.tasks} tasks")
        if self.file_bytes:
            parts.append(f"files {fmt_bytes(self.file_bytes)}")
        if self.disk_bytes:
            parts.append(f"disk {fmt_bytes(self.disk_bytes)}")
        return ", ".join(parts) or "no limits"


def _proc_table() -> dict[int, tuple[int, int, int]]:
    """pid → (ppid, threads, resident pages) of every process on the host."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        rest = data[data.rfind(b")") + 2:].split()
        try:
            table[int(name)] = (int(rest[1]), int(rest[17]), int(rest[21]))
        except (IndexError, ValueError):
            continue
    return table


def read_worker_file(path: Path, head: int | None = None, tail: int | None = None, offset: int = 0) -> bytes:
    """The first `head` bytes from `offset`, or the last `tail` bytes, of a file a sandboxed process could have replaced (its log, the
    start-up error file): b'' unless it is a regular file, so a symbolic link to a file outside its work dir is
    never followed, and a FIFO or device never blocks or feeds the caller; only what is asked for is read (a
    sparse file the size of the file size limit is not loaded whole)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return b""
        if tail is not None or offset:
            os.lseek(fd, max(info.st_size - tail, 0) if tail is not None else offset, os.SEEK_SET)
        limit = tail if tail is not None else (head if head is not None else info.st_size)
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


_TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(value: Any) -> Any:
    """`value` (a string, or JSON made of them) without the characters a terminal acts on: ESC and the 8-bit CSI
    that start escape sequences (a clipboard write, a title, a cleared screen), carriage return, backspace, the
    rest of C0 and C1. Text that a sandboxed process wrote (its messages, its log) goes through this before
    `aka` keeps or prints it; newlines and tabs stay."""
    if isinstance(value, str):
        return _TERMINAL_CONTROL.sub("", value)
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(item) for item in value]
    return value


def tree_of(root: int, table: dict[int, tuple[int, int, int]] | None = None) -> list[int]:
    """`root` and every descendant still parented inside the tree."""
    table = table if table is not None else _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


DISK_ENTRIES = 20000  # files and directories a worker may add under its work directory and caches


def disk_usage(paths: list[Path], entry_cap: int = DISK_ENTRIES) -> tuple[int, int]:
    """(bytes, entries) under `paths`, stopping after `entry_cap` entries."""
    total = entries = 0
    stack = [str(p) for p in paths]
    while stack and entries < entry_cap:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue
        except OSError:
            continue
    return total, entries


class ContainedProcess:
    """A child started through the shim, its cgroup (if any) and watchdog; `kill` ends its whole tree."""

    def __init__(self, argv: list[str], limits: ResourceLimits, work_dir: Path, writable: list[Path],
                 pid_namespace: bool, popen_kwargs: dict[str, Any], poll_s: float = 0.1) -> None:
        self.limits = limits
        self.pid_namespace = pid_namespace  # the exit status is bwrap's: 128 + signal for a killed child
        self.cgroup = cgroups.create(limits.memory_bytes, limits.tasks) if limits.cgroups else None
        self.memory_by = ("cgroup " + self.cgroup.version) if self.cgroup and self.cgroup.memory_dir else "watchdog"
        self.tasks_by = ("cgroup " + self.cgroup.version) if self.cgroup and self.cgroup.pids_dir else "watchdog"
        self.error_file = work_dir / ".spawn-error"
        try:
            self.error_file.unlink(missing_ok=True)  # a former worker's in this work dir, or its candidate's link
        except OSError:
            pass  # a directory: the shim's exclusive create fails and nothing is read
        self.watched = [work_dir, *writable]
        # what is there already (a shared compiler cache that --precompile-workers or earlier shapes filled) is
        # not this process's writing: the disk limit counts growth from here
        self._disk_base = disk_usage(self.watched, DISK_ENTRIES * 50) if limits.disk_bytes else (0, 0)
        self.reason: str | None = None
        self._task_hits_seen = 0
        self._oom_kills: int | None = None  # read before the cgroup is removed
        rlimits: list[tuple[str, int, int]] = [("RLIMIT_CORE", 0, 0)]
        if limits.cpu_s:
            rlimits.append(("RLIMIT_CPU", int(limits.cpu_s), int(limits.cpu_s) + 5))
        if limits.file_bytes:
            rlimits.append(("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes))
        if limits.tasks and self.tasks_by == "watchdog" and os.getuid() != 0:
            own = sum(1 for n in os.listdir("/proc") if n.isdigit() and _owned(n))
            rlimits.append(("RLIMIT_NPROC", own + limits.tasks, own + limits.tasks))
        spec = {"parent": os.getpid(), "cgroups": self.cgroup.procs_files if self.cgroup else [],
                "rlimits": rlimits, "error_file": str(self.error_file)}
        shim = [sys.executable, "-I", "-S", "-c", _SHIM, json.dumps(spec), *argv]
        self.proc = subprocess.Popen(shim, start_new_session=True, **popen_kwargs)
        self.pid = self.proc.pid
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, args=(poll_s,), name=f"aka-watchdog-{self.pid}",
                                          daemon=True)
        self._watchdog.start()

    def _watch(self, poll_s: float) -> None:
        memory = self.limits.memory_bytes if self.memory_by == "watchdog" else None
        tasks = self.limits.tasks if self.tasks_by == "watchdog" else None
        page = os.sysconf("SC_PAGE_SIZE")
        next_disk = 0.0
        while not self._stop.wait(poll_s) and self.proc.poll() is None:
            if memory or tasks:
                table = _proc_table()
                tree = [p for p in tree_of(self.pid, table) if p in table]
                resident = sum(table[p][2] for p in tree) * page
                threads = sum(table[p][1] for p in tree)
                if memory and resident > memory:
                    self._limit_hit(f"out of memory: limit {fmt_bytes(memory)} (the worker's processes held "
                                    f"{fmt_bytes(resident)} resident; killed by the watchdog)")
                    return
                if tasks and threads > tasks:
                    self._limit_hit(f"task limit reached: limit {tasks} processes and threads ({threads} running; "
                                    "killed by the watchdog)")
                    return
            if self.limits.disk_bytes and time.monotonic() >= next_disk:
                next_disk = time.monotonic() + 1.0
                used, entries = disk_usage(self.watched, self._disk_base[1] + DISK_ENTRIES)
                grown, added = used - self._disk_base[0], entries - self._disk_base[1]
                if grown > self.limits.disk_bytes or added >= DISK_ENTRIES:
                    self._limit_hit(f"disk limit exceeded: limit {fmt_bytes(self.limits.disk_bytes)} in its work "
                                    f"directory and caches ({fmt_bytes(max(grown, 0))} written in {added} new "
                                    "entries; killed)")
                    return

    def _limit_hit(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.kill(wait=False)

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self, wait: bool = True) -> None:
        """SIGKILL the whole tree: the cgroup's processes, every descendant, the process group, the child."""
        if self.cgroup is not None:
            self.cgroup.kill_all()
        if self.proc.poll() is None:  # never signal a pid after it was reaped (it may be another process's now)
            for pid in tree_of(self.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if wait:
            self.proc.wait()

    def close(self) -> None:
        """After the child exited (or was killed): end whatever it left behind and remove its cgroup."""
        self._stop.set()
        if self.cgroup is not None:
            self.cgroup.kill_all()
        if self.proc.poll() is None:
            self.kill()
        if self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=5)
        if self.cgroup is not None:
            self._oom_kills = self.cgroup.oom_kills()
            self.cgroup.remove()

    def limit_reached(self, code: int | None = None) -> str | None:
        """The limit that ended the process, as a one-line verdict, or None."""
        if self.reason:
            return self.reason
        oom_kills = self._oom_kills if self._oom_kills is not None else (self.cgroup.oom_kills() if self.cgroup else 0)
        if oom_kills > 0 and self.limits.memory_bytes:
            return (f"out of memory: limit {fmt_bytes(self.limits.memory_bytes)} (the kernel ended a process of "
                    f"the worker at its cgroup's limit)")
        sig = self._signal(code)
        if sig == signal.SIGXCPU and self.limits.cpu_s:
            return f"CPU time limit exceeded: limit {self.limits.cpu_s:.0f} s of CPU time per process"
        if sig == signal.SIGXFSZ and self.limits.file_bytes:
            return f"file size limit exceeded: limit {fmt_bytes(self.limits.file_bytes)} per file"
        return None

    def _signal(self, code: int | None) -> int | None:
        if code is None:
            return None
        if code < 0:
            return -code
        if self.pid_namespace and 128 < code < 128 + 65:
            return code - 128
        return None

    def exit_description(self, code: int) -> str:
        """How the child ended: the limit it hit, the signal that killed it, or its exit status."""
        verdict = self.limit_reached(code)
        if verdict:
            return verdict
        error = read_worker_file(self.error_file, head=300) if code == SHIM_FAILED else b""
        if error:
            return f"could not be started in its sandbox ({error.decode(errors='replace')})"
        sig = self._signal(code)
        if sig is not None:
            try:
                return f"killed by signal {signal.Signals(sig).name}"
            except ValueError:
                return f"killed by signal {sig}"
        return f"exited with status {code}"

    def explain_error(self, message: str) -> str | None:
        """For an error the child reported itself: the limit behind it (a refused fork, a file cut short)."""
        hits = self.cgroup.task_limit_hits() if self.cgroup is not None else 0
        if hits > self._task_hits_seen and self.limits.tasks:
            self._task_hits_seen = hits
            return f"task limit reached: limit {self.limits.tasks} processes and threads (a fork was refused)"
        if "File too large" in message and self.limits.file_bytes:
            return f"file size limit exceeded: limit {fmt_bytes(self.limits.file_bytes)} per file"
        if "Resource temporarily unavailable" in message and self.limits.tasks and self.tasks_by == "watchdog":
            return f"task limit reached: limit {self.limits.tasks} processes and threads (a fork was refused)"
        return None


def _owned(pid: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False
