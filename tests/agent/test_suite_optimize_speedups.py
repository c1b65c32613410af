"""`aka optimize --suite`: the torch.compile speed-up cells follow --compare-compile and
--compare-compile-max-autotune (one re-evaluation of the incumbent times what they ask for)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from aka_tui.agent import suite_optimize
from aka_tui.cli import build_parser, parse_args


def test_the_speedup_cells_follow_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[bool, bool]] = []

    def re_evaluated(problem: Any, session: Any, options: Any, profile: Any, default_mode: bool = True,
                     max_autotune: bool = False) -> tuple[tuple[float | None, float | None], str]:
        asked.append((default_mode, max_autotune))
        return (1.5 if default_mode else None, 2.0 if max_autotune else None), ""

    monkeypatch.setattr(suite_optimize, "_compile_speedup", re_evaluated)

    def cells(compile_: bool, max_autotune: bool, correct: bool = True) -> tuple[list[str], str]:
        args = argparse.Namespace(compare_compile=compile_, compare_compile_max=max_autotune)
        return suite_optimize._speedup_cells(args, None, None, None, None, correct)

    assert cells(False, False) == (["-"], "")
    assert cells(True, False) == (["1.50x"], "")
    assert cells(True, True) == (["1.50x", "2.00x"], "")
    assert cells(False, True) == (["-", "2.00x"], "")
    assert cells(True, True, correct=False) == (["-", "-"], "")  # an incorrect incumbent is not re-evaluated
    assert asked == [(True, False), (True, True), (False, True)]


def test_optimize_takes_the_max_autotune_comparison() -> None:
    args = parse_args(build_parser(), ["optimize", "--suite", "problems", "--compare-compile-max-autotune"])
    assert args.compare_compile_max and not args.compare_compile


def test_operators_that_do_not_load_are_named_not_dropped(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A suite directory whose operators fail to load says which and why, and counts them in the last line."""
    from aka_tui.cli import main

    (tmp_path / "suite" / "broken_op").mkdir(parents=True)
    (tmp_path / "suite" / "broken_op" / "problem.json").write_text("{}")
    assert main(["optimize", "--suite", str(tmp_path / "suite"), "--score-only", "--device", "cpu",
                 "--sessions", str(tmp_path / "sessions")]) == 0
    out = capsys.readouterr().out
    assert "warning: skipping operator broken_op: broken_op: " in out
    assert "real kernels: 0 of 0 operators (1 more not loaded: broken_op)" in out
