"""Hermetic test environment: offline, a private HOME/AKA_HOME, the Triton interpreter on CPU."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

_HOME = tempfile.mkdtemp(prefix="aka-test-home-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)  # each test process's private home goes with it
os.environ["HOME"] = _HOME
os.environ["AKA_HOME"] = str(Path(_HOME) / "aka")
os.environ["XDG_CACHE_HOME"] = str(Path(_HOME) / "cache")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["AKA_FIXED_SEEDS"] = "1"  # evaluations draw a seed salt each unless told: tests stay reproducible
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module is imported
    # Evaluation workers and CLI subprocesses (this process has its threads already): one OpenMP thread
    # each. Tests run independent evaluations side by side (tests/prefetch.py), and two workers with two
    # spinning OpenMP threads each on the 2-core CI machine slow each other down: 8 red-team evaluations,
    # two at a time, took 15.8 s with 2 threads per worker and 9.9 s with 1 (one at a time: 19.6 s / 20.9 s).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Under pytest-xdist (`make test` runs 2 workers) every worker is one such process: its own torch ops get
    # their share of the cores, not all of them each.
    if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        torch.set_num_threads(max(1, cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = REPO / "problems"
DATA = Path(__file__).resolve().parent / "data"
CANDIDATES = DATA / "candidates"


@pytest.fixture(scope="session")
def shipped_kb_index(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The shipped knowledge base's index at its default place (under this session's AKA_HOME), synced once: the
    tests that search the shipped entries (retrieval quality, the app's search) share it instead of each embedding
    all of them again (~15 s on 2 cores)."""
    import fcntl
    import shutil

    from aka_tui.knowledge.index import KbIndex, default_index_dir
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    kb = load_kb(default_kb_dir())
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run:  # the xdist workers of one run embed the entries once: the first builds, the others copy its index
        # the run's base temp dir (each worker's is a child of it; pytest removes old runs' dirs)
        shared = tmp_path_factory.getbasetemp().parent / f"aka-test-kb-index-{run}"
        with open(f"{shared}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not shared.exists():
                KbIndex(kb.root, shared / "index").sync(kb)
                (shared / "built").touch()
            target = default_index_dir(kb.root)
            if (shared / "built").exists() and not target.exists():
                shutil.copytree(shared / "index", target)
    index = KbIndex(kb.root)
    index.sync(kb)  # finds every entry unchanged when the copy came first
    return index


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine: make test-gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
