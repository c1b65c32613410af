"""`aka`: the command line. One module per command (parser.py lists them); heavy modules are imported inside the
commands that need them."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from aka_tui.cli.parser import build_parser, parse_args
from aka_tui.errors import AkaError

__all__ = ["EXIT_ERROR", "Terminated", "build_parser", "main", "parse_args"]

EXIT_ERROR = 2


def main(argv: list[str] | None = None, run: Callable[..., int] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = parse_args(build_parser(), sys.argv[1:] if argv is None else list(argv))
    if not getattr(args, "func", None):
        return _open_app(run, getattr(args, "app_suite", None))
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)  # unwind like Ctrl-C: workers are killed on the way
    try:
        return int(args.func(args))
    except AkaError as exc:
        print(f"{exc.title}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if not missing or missing == "aka_tui":
            raise
        print(f"aka: this Python ({sys.executable}) has no module {missing!r}, which this command needs: run "
              "scripts/setup.sh, then use .venv/bin/python -m aka_tui", file=sys.stderr)
        return EXIT_ERROR
    except Terminated:
        print("terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _open_app(run: Callable[..., int] | None, suite: str | None = None) -> int:
    """`aka` with no subcommand: the Textual app (`run(app)` replaces running it, for tests)."""
    try:
        from aka_tui.tui.app import AkaApp, run_app
    except ImportError as exc:
        print(f"the app needs textual ({exc}); run scripts/setup.sh, or use `aka --help` for the commands",
              file=sys.stderr)
        return EXIT_ERROR
    suite_dir = Path(suite) if suite else None
    if suite_dir is not None and not suite_dir.is_dir():
        what = "is a file, not a directory" if suite_dir.exists() else "does not exist"
        print(f"aka: suite directory {suite} {what}", file=sys.stderr)
        return EXIT_ERROR
    if run is not None:
        return int(run(AkaApp(suite_dir=suite_dir)))
    return run_app(suite_dir)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is so that every running worker is killed while unwinding."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
