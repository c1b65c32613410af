"""Hardware profiles: datasheet peaks per execution path (package data), measured profiles, detection."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from aka_tui.errors import HardwareProfileError
from aka_tui.paths import aka_home

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
PATHS = ("fp8_tc", "int8_tc", "bf16_tc", "fp16_tc", "tf32_tc", "fp32", "fp64")
# When a SKU lacks a path (A100 has no fp8), FLOPs run on the next slower one.
_PATH_FALLBACK = {"fp8_tc": "fp16_tc", "int8_tc": "fp16_tc", "tf32_tc": "fp32", "bf16_tc": "fp16_tc"}


@dataclass(frozen=True)
class HardwareProfile:
    """Peaks of one device. `measured` profiles come from `aka hw calibrate`, datasheet ones ship here."""

    name: str
    display_name: str
    vendor: str
    arch: str
    aliases: tuple[str, ...]
    peaks_tflops: dict[str, float]
    hbm_bandwidth_tbps: float
    l2_bytes: int
    sm_count: int
    memory_gib: float
    source: str
    representative: bool = True
    measured: bool = False
    empty_launch_us: float | None = None
    measurements: dict[str, Any] = field(default_factory=dict)

    def peak_flops_per_s(self, path: str) -> float:
        """Peak FLOP/s on an execution path (falls back to a slower path the SKU has)."""
        seen = path
        while seen not in self.peaks_tflops and seen in _PATH_FALLBACK:
            seen = _PATH_FALLBACK[seen]
        if seen not in self.peaks_tflops:
            raise HardwareProfileError(f"profile {self.name} has no peak for path {path!r}")
        return self.peaks_tflops[seen] * 1e12

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_tbps * 1e12

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["aliases"] = list(self.aliases)
        return data


def profile_from_json(data: dict[str, Any], origin: Path) -> HardwareProfile:
    try:
        peaks = {str(k): float(v) for k, v in data["peaks_tflops"].items()}
        return HardwareProfile(
            name=str(data["name"]), display_name=str(data.get("display_name", data["name"])),
            vendor=str(data.get("vendor", "unknown")), arch=str(data.get("arch", "unknown")),
            aliases=tuple(str(a) for a in data.get("aliases", [])), peaks_tflops=peaks,
            hbm_bandwidth_tbps=float(data["hbm_bandwidth_tbps"]), l2_bytes=int(data["l2_bytes"]),
            sm_count=int(data.get("sm_count", 1)), memory_gib=float(data.get("memory_gib", 0)),
            source=str(data.get("source", "")), representative=bool(data.get("representative", True)),
            measured=bool(data.get("measured", False)),
            empty_launch_us=None if data.get("empty_launch_us") is None else float(data["empty_launch_us"]),
            measurements=dict(data.get("measurements", {})),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise HardwareProfileError(f"{origin}: malformed hardware profile ({exc!r}); fields needed: "
                                   "name, peaks_tflops, hbm_bandwidth_tbps, l2_bytes") from None


def measured_dir() -> Path:
    return aka_home() / "hardware"


_SHIPPED: dict[str, HardwareProfile] = {}  # read once per process: a long run never depends on the directory again


def datasheet_profiles() -> dict[str, HardwareProfile]:
    """The shipped datasheet profiles by name.

    Read once per process, and listed with `os.listdir`, which raises: `Path.glob` on Python 3.12 swallows an
    OSError on the directory and yields nothing, which a long scoring run on an H200 once reported mid-run as
    "no hardware profile matches GPU 'NVIDIA H200'" (2026-12-06)."""
    if not _SHIPPED:
        try:
            names = sorted(name for name in os.listdir(PROFILE_DIR) if name.endswith(".json"))
            loaded = {}
            for name in names:
                path = PROFILE_DIR / name
                loaded[path.stem] = profile_from_json(json.loads(path.read_text()), path)
        except OSError as exc:
            raise HardwareProfileError(f"cannot read the shipped hardware profiles in {PROFILE_DIR}: {exc}; "
                                       "check the installation, or pass --hardware NAME") from None
        if not loaded:
            raise HardwareProfileError(f"no hardware profiles in {PROFILE_DIR}: the installation is incomplete")
        _SHIPPED.update(loaded)
    return dict(_SHIPPED)


def measured_profiles() -> dict[str, HardwareProfile]:
    """Profiles written by `aka hw calibrate` (named `<sku>-measured`); unreadable ones are skipped."""
    profiles: dict[str, HardwareProfile] = {}
    directory = measured_dir()
    if directory.is_dir():
        for path in sorted(directory.glob("*.json")):
            try:
                profile = profile_from_json(json.loads(path.read_text()), path)
            except (HardwareProfileError, OSError, ValueError):  # damaged JSON, or bytes that are not UTF-8
                continue
            profiles[profile.name] = profile
    return profiles


def all_profiles() -> dict[str, HardwareProfile]:
    return {**datasheet_profiles(), **measured_profiles()}


def get_profile(name: str) -> HardwareProfile:
    """Profile by name or alias (case-insensitive)."""
    profiles = all_profiles()
    key = name.strip().lower()
    for profile in profiles.values():
        if key == profile.name.lower() or key in (a.lower() for a in profile.aliases):
            return profile
    raise HardwareProfileError(f"unknown hardware profile {name!r}; known: {', '.join(sorted(profiles))}")


def match_device_name(device_name: str) -> HardwareProfile | None:
    """The datasheet profile whose longest alias occurs in a device name reported by the driver."""
    lowered = device_name.lower()
    best: tuple[int, HardwareProfile] | None = None
    for profile in datasheet_profiles().values():
        for alias in profile.aliases:
            if alias.lower() in lowered and (best is None or len(alias) > best[0]):
                best = (len(alias), profile)
    return best[1] if best else None


def detect_profile(device: str = "auto", prefer_measured: bool = False) -> HardwareProfile:
    """Profile of the device evaluations run on: the GPU's SKU, or `cpu` without one."""
    import torch

    use_cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if not use_cuda:
        return get_profile("cpu")
    if not torch.cuda.is_available():
        raise HardwareProfileError("--device cuda asked for, but torch sees no CUDA device")
    index = torch.device(device).index if ":" in device else torch.cuda.current_device()
    device_name = torch.cuda.get_device_name(index or 0)
    profile = match_device_name(device_name)
    if profile is None:
        raise HardwareProfileError(
            f"no hardware profile matches GPU {device_name!r}; pass --hardware NAME or run `aka hw calibrate`")
    if prefer_measured:
        measured = measured_profiles().get(f"{profile.name}-measured")
        if measured is not None:
            return measured
    return profile


def save_measured(profile: HardwareProfile) -> Path:
    """Write a measured profile to the user's state directory."""
    directory = measured_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{profile.name}.json"
    path.write_text(json.dumps(profile.to_json(), indent=2) + "\n")
    return path


def with_measurements(base: HardwareProfile, peaks_tflops: dict[str, float], bandwidth_tbps: float,
                      empty_launch_us: float, measurements: dict[str, Any]) -> HardwareProfile:
    """A measured profile derived from a datasheet one (paths not measured keep the datasheet peak)."""
    return replace(base, name=f"{base.name}-measured", display_name=f"{base.display_name} (measured)",
                   aliases=(), peaks_tflops={**base.peaks_tflops, **peaks_tflops},
                   hbm_bandwidth_tbps=bandwidth_tbps, measured=True, empty_launch_us=empty_launch_us,
                   measurements=measurements, source=f"measured by aka hw calibrate; {base.source}")
