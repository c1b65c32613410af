"""Run a whole `aka` command inside the sandbox, for commands that import candidate code in their own process
(the library comparison): its output is relayed line by line with control characters removed and secrets
scrubbed, and the files it wrote in its private output directory are copied (scrubbed) where they belong."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import ResourceLimits
from aka_tui.secrets import scrub

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # ESC sequences could rewrite the person's terminal


def _relay(source: IO[bytes], target: IO[str], replacements: list[tuple[str, str]]) -> None:
    for raw in iter(source.readline, b""):
        line = _CONTROL.sub("", raw.decode(errors="replace").rstrip("\n"))
        for old, new in replacements:
            line = line.replace(old, new)
        target.write(scrub(line) + "\n")
        target.flush()


def run_sandboxed_command(aka_args: list[str], view_read_only: list[Path], out_dir: Path, gpu: bool,
                          limits: ResourceLimits, requested: str | None) -> int:
    """`python -m aka_tui ARGS` in the sandbox, with `{OUT}` in ARGS standing for its private output directory,
    whose files end up in `out_dir`; returns the command's exit status."""
    with tempfile.TemporaryDirectory(prefix="aka-sandboxed-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        private_out = work / "out"
        private_out.mkdir()
        args = [a.replace("{OUT}", str(private_out)) for a in aka_args]
        view = bwrap.View(work, tuple(view_read_only), (), gpu, {} if gpu else {"TRITON_INTERPRET": "1"})
        process, report = bwrap.spawn([sys.executable, "-m", "aka_tui", *args], view, limits, requested,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        replacements = [(str(private_out), str(out_dir))]
        relays = [threading.Thread(target=_relay, args=(stream, target, replacements), daemon=True)
                  for stream, target in ((process.proc.stdout, sys.stdout), (process.proc.stderr, sys.stderr))]
        for relay in relays:
            relay.start()
        try:
            code = process.wait()
        finally:
            process.kill()
            process.close()
            for relay in relays:
                relay.join(timeout=10)
            _copy_out(private_out, out_dir, report.to_json())
        verdict = process.limit_reached(code)
        if verdict:
            print(f"the sandboxed command ended: {verdict}", file=sys.stderr)
        print(report.line(), file=sys.stderr)
        return code


def _copy_out(private_out: Path, out_dir: Path, sandbox_report: dict[str, str]) -> None:
    """The command's regular files (reports, checkpoints), scrubbed; nothing else (no links, no directories).
    A JSON object gets the sandbox it ran in as `sandbox`."""
    files = [p for p in private_out.iterdir() if p.is_file() and not p.is_symlink()] if private_out.is_dir() else []
    if not files:
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in files:
        target = out_dir / path.name
        if path.stat().st_size > 256 << 20:
            continue
        try:
            text = path.read_text(errors="replace").replace(str(private_out), str(out_dir))
            if path.suffix == ".json":
                text = _with_sandbox(text, sandbox_report)
            target.write_text(scrub(text))
        except OSError as exc:
            print(f"warning: could not copy {path.name} to {out_dir}: {exc}", file=sys.stderr)


def _with_sandbox(text: str, sandbox_report: dict[str, str]) -> str:
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    data["sandbox"] = sandbox_report
    return json.dumps(data, indent=1, default=str) + "\n"
