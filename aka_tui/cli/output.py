"""What the commands print besides their tables: progress on stderr, the sandbox line, scrubbed report text."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any


def scrub(text: str) -> str:
    """The text with secrets replaced by [REDACTED] (aka_tui.secrets), before it goes into a report file."""
    from aka_tui.secrets import scrub as scrub_secrets

    return scrub_secrets(text)


def sandbox_line(results: list[Any]) -> str:
    """How the evaluations were contained (one line; `sandbox: none` says why). The CPU-time limit scales with
    each job's shapes, so jobs that differ only in it are one entry with the range."""
    from aka_tui.bench.sandbox.bwrap import SandboxReport

    cpu = re.compile(r"CPU (\d+) s")
    groups: dict[str, list[int]] = {}
    for r in results:
        detail = r.provenance.get("sandbox_detail") or {}
        seconds = [int(m) for m in cpu.findall(str(detail.get("limits", "")))]
        key = json.dumps({**detail, "limits": cpu.sub("CPU {} s", str(detail.get("limits", "")))}
                         if detail else {}, sort_keys=True)
        groups.setdefault(key, []).extend(seconds)
    lines = []
    for key in sorted(groups):
        detail = json.loads(key)
        if not detail:
            lines.append("sandbox: none (not recorded)")
            continue
        spans = groups[key]
        span = "?" if not spans else str(min(spans)) if min(spans) == max(spans) else f"{min(spans)}-{max(spans)}"
        lines.append(SandboxReport(**{**detail, "limits": detail["limits"].replace("{}", span)}).line())
    return "; ".join(lines) or "sandbox: none (nothing evaluated)"


class Progress:
    """A one-line progress display on stderr (a bar when stderr is a terminal, lines otherwise)."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.started = time.monotonic()
        self.precompiled = 0

    def __call__(self, op: str, event: str, result: Any) -> None:
        if event == "precompiled" and isinstance(result, tuple):  # (shape id, error or "")
            self.precompiled += 1
            shape, error = result
            self._line(f"precompiled {self.precompiled}/{self.total}  {time.monotonic() - self.started:6.1f}s  "
                       f"{op}:{shape} {error or 'ok'}")
        if event == "shape" and result is not None:
            self.done += 0 if getattr(result, "fuzz", False) else 1  # fuzzed shapes are extra to the total
            status = result.status
            filled = int(30 * self.done / self.total)
            bar = "#" * filled + "." * (30 - filled)
            self._line(f"[{bar}] {self.done}/{self.total} shapes  {time.monotonic() - self.started:6.1f}s  "
                       f"{op}:{result.shape_id} {status}")

    def _line(self, text: str) -> None:
        if self.tty:
            sys.stderr.write("\r" + text[:120].ljust(120))
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
