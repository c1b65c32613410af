"""Device-name detection of the shipped hardware profiles, and its robustness over a long run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aka_tui.bench.roofline import hardware
from aka_tui.errors import HardwareProfileError


def _unreadable(path: object) -> list[str]:
    raise OSError(24, "Too many open files")


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no profiles read yet (the module reads them once per process)."""
    monkeypatch.setattr(hardware, "_SHIPPED", {})


def test_driver_names_match_their_profiles(fresh_cache: None) -> None:
    assert hardware.match_device_name("NVIDIA H200").name == "h200"
    assert hardware.match_device_name("NVIDIA H100 80GB HBM3").name == "h100_sxm"
    assert hardware.match_device_name("NVIDIA H100 PCIe").name == "h100_pcie"
    assert hardware.match_device_name("Some Unknown Accelerator") is None


def test_profiles_are_read_once_so_a_later_failure_to_list_them_does_not_lose_the_device(
        fresh_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scoring run looks its profile up for every operator; after the first read, the directory is not needed
    (on Python 3.12 `Path.glob` turns an OSError on it into an empty listing, and the run stopped mid-way)."""
    assert hardware.match_device_name("NVIDIA H200").name == "h200"

    monkeypatch.setattr(os, "listdir", _unreadable)
    assert hardware.match_device_name("NVIDIA H200").name == "h200"


def test_an_unreadable_profile_directory_is_named_not_reported_as_an_unknown_gpu(
        fresh_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "listdir", _unreadable)
    with pytest.raises(HardwareProfileError, match="cannot read the shipped hardware profiles.*Too many open files"):
        hardware.match_device_name("NVIDIA H200")


def test_an_empty_profile_directory_says_the_installation_is_incomplete(
        fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(hardware, "PROFILE_DIR", tmp_path)
    with pytest.raises(HardwareProfileError, match="installation is incomplete"):
        hardware.datasheet_profiles()


def test_callers_get_their_own_mapping(fresh_cache: None) -> None:
    first = hardware.datasheet_profiles()
    first.clear()
    assert "h200" in hardware.datasheet_profiles()
