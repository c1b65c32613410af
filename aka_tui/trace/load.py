"""Read a Chrome/Kineto trace (plain or gzipped JSON) into a dict, with one-line errors for bad files."""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

from aka_tui.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_trace(path: str | Path) -> dict[str, Any]:
    """Load `path` (gzip detected by its magic bytes, not the suffix) as `{"traceEvents": [...], ...}`.

    A bare JSON array of events (the Chrome "JSON Array Format") is accepted and wrapped.
    """
    path = Path(path)
    hint = "re-export it with torch.profiler's export_chrome_trace"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"trace file {path} does not exist") from None
    except OSError as exc:
        raise TraceError(f"cannot read trace {path}: {exc.strerror}") from None
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise TraceError(f"trace {path} is a truncated or corrupt gzip file ({exc}); {hint}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"trace {path} is neither JSON text nor gzipped JSON; {hint}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        what = ("it ends early (truncated?)" if exc.pos >= len(text.rstrip())
                else f"{exc.msg} at line {exc.lineno} column {exc.colno}")
        raise TraceError(f"trace {path} is not valid JSON: {what}; {hint}") from None
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or "traceEvents" not in data:
        raise TraceError(f"trace {path} has no `traceEvents` list: not a Chrome/Kineto trace; {hint}")
    if not isinstance(data["traceEvents"], list):
        raise TraceError(f"trace {path}: `traceEvents` must be a list of events; {hint}")
    return data
