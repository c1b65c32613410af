"""`aka bench`: its subcommands run, rescore, libraries and illusion (the old flag forms: bench_legacy.py)."""

from __future__ import annotations

import argparse
from typing import Any

from aka_tui.cli import bench_illusion, bench_libraries, bench_rescore, bench_run


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="evaluate a candidate set or a baseline over the suite",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Score a candidate set or a baseline over the suite (run), score stored reports\n"
                                   "again (rescore), time kernels beside the vendor libraries (libraries), or show\n"
                                   "the correctness illusion (illusion).\n\n"
                                   "The flag forms before these subcommands still work:\n"
                                   "  aka bench --candidates DIR | --baseline KIND ...  = aka bench run ...\n"
                                   "  aka bench --rescore REPORT...                     = aka bench rescore REPORT...\n"
                                   "  aka bench --library-compare [DIR]                 = aka bench libraries [DIR]\n"
                                   "  aka bench --candidates DIR --report illusion      = aka bench illusion DIR")
    actions = p.add_subparsers(dest="bench_command", metavar="ACTION", required=True)
    for module in (bench_run, bench_rescore, bench_libraries, bench_illusion):
        module.register(actions)
