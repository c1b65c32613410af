"""Hermetic test environment: offline, a private HOME/AKA_HOME, the Triton interpreter on CPU."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_HOME = tempfile.mkdtemp(prefix="aka-test-home-")
os.environ["HOME"] = _HOME
os.environ["AKA_HOME"] = str(Path(_HOME) / "aka")
os.environ["XDG_CACHE_HOME"] = str(Path(_HOME) / "cache")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module is imported

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = REPO / "problems"
DATA = Path(__file__).resolve().parent / "data"
CANDIDATES = DATA / "candidates"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine: make test-gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
