"""Helpers of the hostile-candidate corpus: canaries to attack, placeholders, snapshots, survivors, secrets.

A case file is a candidate for silu_and_mul whose docstring starts with `expected: <status>[: <message
fragment>]`, optionally followed by `limits: name=value ...` (memory_gib, tasks, cpu_s, file_mib). Before it
runs, `{{CANARY}}`, `{{PROBLEM}}`, `{{REPO}}`, `{{PORT}}`, `{{MARKER}}` and `{{KEY}}` in it are replaced by
the case's canary directory, its copy of the problem, the checkout, the test's server port, a marker unique
to the case (for finding processes it left) and the fake API key the test put in the environment.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.secrets import encoded_forms
from tests.conftest import PROBLEMS, REPO

HERE = Path(__file__).resolve().parent
CASES = sorted((HERE / "hostile").glob("*.py"))
SHAPE = "smoke_t7_i300_fp16"
WATCHED_REPO_TREES = ("kb", "problems", "aka_tui")
PRIVATE_PREFIX = "aka-private-"  # the canary's private key holds this and a random token
HAVE_GIT = importlib.util.find_spec("git") is not None


def docstring(case: Path) -> list[str]:
    return (ast.get_docstring(ast.parse(case.read_text())) or "").splitlines()


def expected(case: Path) -> tuple[str, str]:
    """(status, message fragment) the case must end with."""
    first = docstring(case)[0]
    assert first.startswith("expected: "), f"{case.name}: first docstring line must be 'expected: <status>'"
    status, _, fragment = first.removeprefix("expected: ").partition(": ")
    return status.strip(), fragment.strip()


def limits_of(case: Path, sandbox: str, cgroups: bool = True) -> WorkerLimits:
    """The worker limits the case asks for (small ones, so a limit is reached in seconds)."""
    limits = WorkerLimits(startup_s=120, per_shape_s=60, sandbox=sandbox, cgroups=cgroups)
    for line in docstring(case):
        if line.startswith("limits: "):
            for item in line.removeprefix("limits: ").split():
                name, value = item.split("=")
                if name == "memory_gib":
                    limits.memory_bytes = int(float(value) * (1 << 30))
                elif name == "file_mib":
                    limits.file_bytes = int(float(value) * (1 << 20))
                elif name == "tasks":
                    limits.tasks = int(value)
                elif name == "cpu_s":
                    limits.cpu_s = float(value)
                else:
                    raise AssertionError(f"{case.name}: unknown limit {name!r}")
    return limits


@dataclass
class Canary:
    """What a case attacks: a home directory, a session repository, a copy of the problem."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def session(self) -> Path:
        return self.root / "session"

    @property
    def problem(self) -> Path:
        return self.root / "silu_and_mul"

    @property
    def private_key(self) -> str:
        """The token in the person's private key file, which no result or output may contain."""
        text = (self.home / ".ssh" / "id_ed25519").read_text()
        return next(line for line in text.splitlines() if line.startswith(PRIVATE_PREFIX))

    @staticmethod
    def create(root: Path) -> Canary:
        canary = Canary(root)
        canary.home.mkdir(parents=True)
        (canary.home / ".bashrc").write_text("# the person's shell start-up\n")
        (canary.home / ".ssh").mkdir()
        (canary.home / ".ssh" / "id_ed25519").write_text(
            f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PRIVATE_PREFIX}{secrets.token_hex(16)}\n"
            "-----END OPENSSH PRIVATE KEY-----\n")
        if HAVE_GIT:
            from aka_tui.record.session_repo import SessionRepo

            SessionRepo.create(canary.session, {"problem": "silu_and_mul"})
        else:  # a GPU server without GitPython: the same files to attack, no repository to commit to
            (canary.session / ".git" / "hooks").mkdir(parents=True)
            (canary.session / "kernel.py").write_text("# recorded\n")
        shutil.copytree(PROBLEMS / "silu_and_mul", canary.problem, ignore=shutil.ignore_patterns("__pycache__"))
        return canary

    def render(self, case: Path, port: int, marker: str, key: str) -> Path:
        text = case.read_text()
        for name, value in (("CANARY", self.root), ("PROBLEM", self.problem), ("REPO", REPO), ("PORT", port),
                            ("MARKER", marker), ("KEY", key)):
            text = text.replace("{{" + name + "}}", str(value))
        path = self.root / "candidates" / case.name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return path


def snapshot(*roots: Path) -> dict[str, str]:
    """sha256 of every file under `roots` (compiled bytecode caches left out: Python writes those itself)."""
    digests = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if "__pycache__" in path.parts or not path.is_file() or path.is_symlink():
                continue
            digests[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def repo_snapshot() -> dict[str, str]:
    return snapshot(*(REPO / tree for tree in WATCHED_REPO_TREES))


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def survivors(marker: str, wait_s: float = 5.0) -> list[int]:
    """Processes whose command line holds `marker`, after giving a dying tree `wait_s` to go."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    command = handle.read()
                with open(f"/proc/{name}/stat", "rb") as handle:
                    zombie = handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
            except OSError:
                continue
            if marker.encode() in command and not zombie:
                found.append(int(name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def leaks(key: str, *texts: str) -> list[str]:
    """The forms of `key` (plain, base64 at any alignment, hex, reversed…) found in `texts`."""
    return sorted({form for form in encoded_forms(key) for text in texts if form in text})


def files_text(root: Path) -> str:
    """Every file under `root` as text (binary ones decoded loosely), for a secret search."""
    return "\n".join(p.read_bytes().decode(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())
