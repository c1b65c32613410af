"""What the app loads once, off the UI thread: the suite, the hardware profile, recorded sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_tui.tui.config import TuiConfig
from aka_tui.tui.records import Records, load_records, report_files


@dataclass
class AppPaths:
    """Where the app reads problems, sessions and reports (tests point these at fixtures)."""

    suite_dir: Path
    sessions_dir: Path
    example_sessions_dir: Path
    report_dirs: list[Path] = field(default_factory=list)
    kb_dir: Path | None = None  # None: the shipped kb/

    @staticmethod
    def default(config: TuiConfig, suite_dir: Path | None = None) -> AppPaths:
        from aka_tui.bench.problem.lookup import default_suite_dir  # noqa: PLC0415 (imports torch: called in a worker)

        suite = Path(suite_dir).resolve() if suite_dir else default_suite_dir()
        root = default_suite_dir().parent  # sessions' examples, reports and the KB are the project's, whatever the suite
        return AppPaths(suite, Path(config.sessions_dir).resolve(), root / "sessions" / "examples",
                        [Path("reports").resolve(), root / "docs" / "benchmarks"], root / "kb")

    def session_dirs(self) -> list[tuple[Path, bool]]:
        dirs = [(self.sessions_dir, False)]
        if self.example_sessions_dir.resolve() != self.sessions_dir.resolve():
            dirs.append((self.example_sessions_dir, True))
        return dirs


@dataclass
class AppData:
    """The loaded suite and what was recorded about it."""

    problems: dict[str, Any]
    load_errors: dict[str, str]
    profile: Any
    detected_profile: Any
    records: Records
    device: str

    @property
    def interpreter(self) -> bool:
        return not getattr(self.profile, "representative", True) or self.device == "cpu"

    def short_note(self) -> str:
        """The header's subtitle: profile and device (the interpreter warning is said once, in the screen)."""
        return f"profile {self.profile.name} on {self.device}" + (" (interpreter)" if self.interpreter else "")

    def hardware_note(self) -> str:
        if self.interpreter:
            return (f"profile {self.profile.name} on {self.device} — the CPU Triton interpreter: timings are NOT "
                    "representative of any GPU")
        note = f"profile {self.profile.name} ({self.profile.display_name}) on {self.device}"
        return note


def records_signature(paths: AppPaths) -> tuple[tuple[str, int], ...]:
    """What changes when a session or report is added or written: names and modification times (cheap)."""
    seen: list[tuple[str, int]] = []
    for directory, _example in paths.session_dirs():
        if not directory.is_dir():
            continue
        for child in directory.iterdir():
            for name in ("events.jsonl", "session.json"):
                try:
                    seen.append((f"{child}/{name}", (child / name).stat().st_mtime_ns))
                except OSError:
                    continue
    for directory in paths.report_dirs:
        seen += [(str(f), f.stat().st_mtime_ns) for f in report_files(directory)]
    return tuple(sorted(seen))


def load_app_data(config: TuiConfig, paths: AppPaths) -> AppData:
    """Load the suite (malformed problems are listed, not fatal), the profile and the records."""
    from aka_tui.bench.evaluator.evaluate import resolve_device
    from aka_tui.bench.problem.lookup import load_suite
    from aka_tui.bench.roofline.hardware import detect_profile, get_profile

    suite = load_suite(paths.suite_dir)
    device = resolve_device("auto")
    detected = detect_profile(device)
    profile = get_profile(config.hardware) if config.hardware else detected
    records = load_records(paths.session_dirs(), paths.report_dirs, paths.suite_dir.name)
    return AppData(suite.problems, {k: str(v) for k, v in suite.errors.items()}, profile, detected, records, device)
