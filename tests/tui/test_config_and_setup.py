"""A mistyped settings file gives one line and defaults for what is wrong; `make run` skips the set-up's
pip steps when the venv is already set up from the same requirement files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aka_tui.tui.config import TuiConfig, load_config
from tests.conftest import REPO


def test_a_mistyped_settings_file_keeps_the_good_values_and_says_what_it_ignored(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"iterations": "four", "iteratons": 8, "dropout_p": 2, "seed": 7,
                                "proposer": "anthropic", "use_kb": "yes"}))
    config, warning = load_config(path)
    defaults = TuiConfig()
    assert (config.iterations, config.dropout_p, config.use_kb) == (defaults.iterations, defaults.dropout_p,
                                                                     defaults.use_kb)
    assert (config.seed, config.proposer) == (7, "anthropic")  # the valid values stay
    assert "\n" not in warning
    for part in ('iterations = "four" is not a int', "unknown setting 'iteratons' ignored",
                 "dropout p must be in [0, 1)", 'use_kb = "yes" is not a bool'):
        assert part in warning


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\"just a string\""])
def test_an_unreadable_settings_file_gives_all_the_defaults(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    config, warning = load_config(path)
    assert config == TuiConfig() and warning and "\n" not in warning


FAKE_PYTHON = """#!/bin/bash
# Stands in for .venv/bin/python: imports succeed, pip calls are logged.
if [[ "$1" == "-m" && "$2" == "pip" ]]; then echo "pip ${*:3}" >> "$(dirname "$0")/../pip.log"; fi
if [[ "$1" == "-c" ]]; then echo "torch 0 triton 0"; fi
exit 0
"""


def _setup(workdir: Path, *options: str) -> tuple[str, list[str]]:
    log = workdir / ".venv" / "pip.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(["bash", "scripts/setup.sh", *options], cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "AKA_PYTHON": "false"}, check=True)
    return done.stdout, log.read_text().splitlines() if log.exists() else []


def test_setup_skips_pip_when_the_venv_is_up_to_date(tmp_path: Path) -> None:
    if shutil.which("sha256sum") is None:
        pytest.skip("needs sha256sum")
    workdir = tmp_path / "checkout"
    (workdir / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", workdir / "scripts" / "setup.sh")
    for name in ("requirements.txt", "requirements-test.txt", "requirements-ray.txt", "pyproject.toml"):
        shutil.copy(REPO / name, workdir / name)
    python = workdir / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)

    first, pip = _setup(workdir)
    assert any("-r requirements.txt" in call for call in pip) and "setup: done" in first
    again, pip = _setup(workdir)
    assert pip == [] and "up to date" in again  # make run: no pip at all
    _output, pip = _setup(workdir, "--test")  # test extras were never installed: pip runs
    assert any("requirements-test.txt" in call for call in pip)
    _output, pip = _setup(workdir)
    assert pip == []  # a plain set-up is covered by the test set-up
    with open(workdir / "requirements.txt", "a") as handle:
        handle.write("# changed\n")
    _output, pip = _setup(workdir, "--test")
    assert any("-r requirements.txt" in call for call in pip)  # a changed requirement file: pip again
