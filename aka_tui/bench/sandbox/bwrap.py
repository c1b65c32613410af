"""The one way candidate code is started: a sandboxed child process (bubblewrap) with an allow-listed
environment, resource limits and a private work directory.

Inside the sandbox (mechanism `bwrap`): no network (own, empty network namespace), no view of other
processes and no way to signal them (own PID namespace; its death kills every process in it), no
capabilities, the system directories read-only, the Python installation, the package and the paths a job
names read-only, and one writable work directory (HOME, TMPDIR and the compiler caches point into it).
The person's home, the project tree, `kb/` and `sessions/` are not there at all. Where bubblewrap is
missing or cannot run, the mechanism is `none`: the same environment allow-list, limits and tree kill apply,
but the filesystem, network and other processes are within the candidate's reach (docs/evaluator.md).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aka_tui.paths as paths
from aka_tui.bench.sandbox.containment import ContainedProcess, GiB, MiB, ResourceLimits, disk_usage
from aka_tui.environment import environment_snapshot
from aka_tui.errors import EvaluationError

MODES = ("auto", "bwrap", "none")
ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "LD_LIBRARY_PATH", "CC", "CXX",
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
})
ENV_PREFIXES = ("LC_", "NVIDIA_", "CUDA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_", "NCCL_", "NVSHMEM_",
                "HIP_", "ROCM_", "HSA_")
# Never passed on, whatever the prefix: anything that looks like a credential.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix")
HIDDEN_IN_ETC = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
GPU_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/nvidia-caps-imex-channels", "/dev/dri", "/dev/kfd")
UNSAFE_FLAG = "--unsafe-no-sandbox"


def default_memory_bytes() -> int:
    """16 GiB, or half the machine's memory where that is less."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 32 * GiB
    return int(min(16 * GiB, total // 2))


@dataclass(frozen=True)
class View:
    """What a sandboxed process sees besides the system: read-only and writable paths, GPUs, its work dir."""

    work_dir: Path
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    gpu: bool = False
    env: dict[str, str] = field(default_factory=dict)  # job-specific additions (after the allow-list)


def find_bwrap() -> str | None:
    """$AKA_BWRAP (a carried binary), else `bwrap` on PATH."""
    configured = os.environ.get("AKA_BWRAP")
    if configured:
        path = os.path.abspath(configured)
        return path if os.access(path, os.X_OK) else None
    return shutil.which("bwrap")


@functools.cache
def _probe(bwrap: str) -> str:
    """'' when `bwrap` runs a process with this module's flags here, else why not (one line)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="aka-sandbox-probe-") as tmp:
        argv = bwrap_argv(bwrap, View(Path(tmp)), ["/bin/sh", "-c", "exit 0"], interpreter=())
        try:
            done = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{bwrap} cannot run ({exc})"
    if done.returncode != 0:
        return f"{bwrap} failed: " + (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
    return ""


@functools.cache
def bwrap_version(bwrap: str) -> str:
    try:
        return subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10,
                              env={"PATH": "/usr/bin:/bin"}).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "bwrap"


def resolve_mode(requested: str | None = None) -> tuple[str, str]:
    """(mechanism, note): `bwrap` or `none`, and why `none` when it is. `requested` None → $AKA_SANDBOX or auto;
    an explicit `bwrap` that cannot run is an error."""
    mode = requested or os.environ.get("AKA_SANDBOX") or "auto"
    if mode not in MODES:
        raise EvaluationError(f"unknown sandbox {mode!r}: use auto, bwrap or none")
    if os.environ.get("AKA_IN_SANDBOX") == "1":
        return "none", "already inside an aka sandbox (the outer one contains this process)"
    if mode == "none":
        return "none", "turned off (--sandbox none)"
    bwrap = find_bwrap()
    problem = ("bubblewrap not found (install it: scripts/setup.sh, or `apt-get install bubblewrap`; or point "
               "AKA_BWRAP at a bwrap binary)") if bwrap is None else _probe(bwrap)
    if problem:
        if mode == "bwrap":
            raise EvaluationError(f"--sandbox bwrap asked for, but {problem}")
        return "none", problem
    return "bwrap", ""


_WARNED: set[str] = set()


def warn_unsandboxed(note: str) -> None:
    """One stderr line per process and reason when candidates run without a sandbox."""
    if note not in _WARNED:
        _WARNED.add(note)
        print(f"warning: candidates run without a sandbox: {note}", file=sys.stderr)


def require_sandbox_for_model(requested: str | None, allow_unsafe: bool, how: str = UNSAFE_FLAG) -> None:
    """Model-written code runs only in a sandbox, unless the person said otherwise with `how`."""
    mechanism, note = resolve_mode(requested)
    if mechanism == "none" and not allow_unsafe:
        raise EvaluationError(f"the anthropic proposer runs model-written code, and candidates would run without a "
                              f"sandbox here ({note}); install bubblewrap, or pass {how} to accept that",
                              "no sandbox")


def worker_environment(view: View, source: dict[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment of a sandboxed process: no keys, tokens or passwords, private caches."""
    source = environment_snapshot() if source is None else dict(source)
    env = {k: v for k, v in source.items()
           if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and not SECRET_NAME.search(k)}
    env.pop("TRITON_CACHE_DIR", None)
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    home = view.work_dir / "home"
    env.update({
        "HOME": str(home), "TMPDIR": str(view.work_dir / "tmp"), "XDG_CACHE_HOME": str(home / ".cache"),
        "TRITON_CACHE_DIR": str(home / ".triton" / "cache"), "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
        "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
        "PYTHONPATH": os.pathsep.join(_python_path_entries(source.get("PYTHONPATH", ""))),
        "PATH": source.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "AKA_IN_SANDBOX": "1",
    })
    env.update(view.env)
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k)}


CACHES_KEPT = 64
CACHE_BUDGET = 8 * GiB  # the kept candidate caches together (`_prune`)
CACHE_ENTRIES = 200_000  # entries counted a cache: beyond, it is measured at what was counted


def cache_dir(kind: str, candidate: str | None, source: bytes | None = None) -> Path:
    """The compiler caches (Triton, inductor) of one candidate's code, kept between its evaluations: keyed by the
    file's content (or the `source` given, for code that travels as text), so no candidate can plant kernels in
    another's cache; the baselines share theirs (the problem's own reference; `--precompile-workers` warms the
    compile baseline's), and so do the sweeps of the knowledge base's own kernels."""
    import hashlib

    from aka_tui.paths import aka_home

    root = aka_home() / "cache" / "sandbox"
    key = f"shared-{kind}"
    if source is not None:
        key = "candidate-" + hashlib.sha256(source).hexdigest()[:24]
    elif candidate:
        try:
            key = "candidate-" + hashlib.sha256(Path(candidate).read_bytes()).hexdigest()[:24]
        except OSError:
            key = "candidate-unreadable"
    path = root / key
    path.mkdir(parents=True, exist_ok=True)
    os.utime(path)
    _prune(root)
    return path


def _prune(root: Path) -> None:
    """Keep the most recently used candidate caches only: at most CACHES_KEPT, and CACHE_BUDGET bytes together.
    The disk limit counts a worker's growth from its start, and a candidate's cache is kept between its workers
    and evaluations, so without a size budget a candidate could leave gigabytes on every restart of its worker;
    the newest cache alone above the budget is emptied too (its kernels compile again)."""
    try:
        caches = sorted((p for p in root.iterdir() if p.name.startswith("candidate-")),
                        key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    total = 0
    for index, cache in enumerate(caches):
        if index < CACHES_KEPT:
            total += disk_usage([cache], CACHE_ENTRIES)[0]
            if total <= CACHE_BUDGET:
                continue
        shutil.rmtree(cache, ignore_errors=True)
        if index == 0:
            cache.mkdir(parents=True, exist_ok=True)  # the cache about to be used: there, and empty
            total = 0


def package_dir() -> Path:
    """The aka_tui package this process runs (the sandbox shows only it, never the tree around it)."""
    return paths.package_dir()


def _python_path_entries(pythonpath: str) -> list[str]:
    """The package root first (so a worker imports this very aka_tui), then the caller's entries, absolute."""
    entries = [str(package_dir().parent)]
    for item in pythonpath.split(os.pathsep):
        if item:
            entries.append(str(Path(item).resolve()))
    return list(dict.fromkeys(entries))


@functools.cache
def python_paths() -> tuple[Path, ...]:
    """Directories a worker's interpreter imports from: its installation and site-packages (not the project)."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(sys.executable)}
    try:
        probe = subprocess.run([sys.executable, "-c", "import sys, json; print(json.dumps(sys.path))"],
                               capture_output=True, text=True, timeout=60, cwd="/",
                               env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        import json

        candidates.update(p for p in json.loads(probe.stdout or "[]") if p and p != "/")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    ours = package_dir()
    paths = {ours}
    for item in candidates:
        path = Path(item).resolve()
        if not path.exists() or path == Path("/"):
            continue
        if (path / "aka_tui").is_dir():
            continue  # a checkout's root: only the package itself is shown (above), never kb/ or sessions/
        paths.add(path)
    return tuple(sorted(paths))


def _covered(path: Path, bound: list[Path]) -> bool:
    return any(path == b or b in path.parents for b in bound)


def bwrap_argv(bwrap: str, view: View, argv: list[str], interpreter: tuple[Path, ...] | None = None) -> list[str]:
    """The bubblewrap command line that runs `argv` inside `view`."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    system: list[Path] = []
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):
            args += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            args += ["--ro-bind", directory, directory]
            system.append(Path(directory))
    for secret in HIDDEN_IN_ETC:
        if os.path.exists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    if os.path.isdir("/etc/ssh"):
        args += ["--tmpfs", "/etc/ssh"]
    args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc"]
    if view.gpu and os.environ.get("AKA_SANDBOX_DEV") == "host":
        args += ["--dev-bind", "/dev", "/dev"]  # escape hatch: a driver that needs device nodes we do not list
    else:
        args += ["--dev", "/dev"]
        for node in sorted({n for pattern in GPU_DEVICES for n in glob.glob(pattern)} if view.gpu else ()):
            args += ["--dev-bind", node, node]
    args += ["--size", str(256 * MiB), "--tmpfs", "/dev/shm", "--size", str(256 * MiB), "--tmpfs", "/tmp"]
    bound = list(system)
    for path in [*(python_paths() if interpreter is None else interpreter), *view.read_only]:
        if path.exists() and not _covered(path, bound):
            args += ["--ro-bind", str(path), str(path)]
            bound.append(path)
    for path in [view.work_dir, *view.writable]:
        args += ["--bind", str(path), str(path)]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", str(view.work_dir), "--", *argv]
    return args


@dataclass(frozen=True)
class SandboxReport:
    """What contained a process, as recorded with each result (`mechanism` is `bwrap` or `none`)."""

    mechanism: str
    detail: str  # the bwrap version, or why there is no sandbox
    limits: str
    memory_by: str
    tasks_by: str

    def to_json(self) -> dict[str, str]:
        return {"mechanism": self.mechanism, "detail": self.detail, "limits": self.limits,
                "memory_by": self.memory_by, "tasks_by": self.tasks_by}

    def line(self) -> str:
        return (f"sandbox: {self.mechanism} ({self.detail}); limits: {self.limits} (memory by {self.memory_by}, "
                f"tasks by {self.tasks_by})")


def spawn(argv: list[str], view: View, limits: ResourceLimits, requested: str | None = None,
          **popen_kwargs: Any) -> tuple[ContainedProcess, SandboxReport]:
    """Start `argv` contained: inside bubblewrap when it can run here, else unsandboxed with a warning."""
    mechanism, note = resolve_mode(requested)
    for sub in ("home", "tmp"):
        (view.work_dir / sub).mkdir(parents=True, exist_ok=True)
    env = worker_environment(view, popen_kwargs.pop("env_source", None))
    if mechanism == "bwrap":
        bwrap = find_bwrap()
        assert bwrap is not None
        command, detail = bwrap_argv(bwrap, view, argv), bwrap_version(bwrap)
    else:
        if "already inside" not in note:
            warn_unsandboxed(note)
        command, detail = argv, note
        popen_kwargs.setdefault("cwd", str(view.work_dir))
    process = ContainedProcess(command, limits, view.work_dir, list(view.writable),
                               pid_namespace=mechanism == "bwrap", popen_kwargs={**popen_kwargs, "env": env})
    return process, SandboxReport(mechanism, detail, limits.describe(), process.memory_by, process.tasks_by)
