"""Problems screen: 22 rows, sorting, filtering, a problem's detail."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Input, Static

from tests.tui.conftest import SIZE, wait_loaded


@pytest.mark.asyncio
async def test_table_loads_sorts_and_filters(make_app: Any) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        table = app.screen.query_one("#problems-table", DataTable)
        assert table.row_count == 22
        weights = [float(table.get_row_at(i)[3]) for i in range(table.row_count)]
        assert weights == sorted(weights, reverse=True)  # heaviest first
        await pilot.press(*"sssss")  # weight → shapes → best S → kernel → recorded on → op (wraps)
        assert app.screen.sort_column == 0
        ops = [table.get_row_at(i)[0] for i in range(table.row_count)]
        assert ops == sorted(ops)
        await pilot.press("r")
        assert [table.get_row_at(i)[0] for i in range(table.row_count)] == sorted(ops, reverse=True)
        await pilot.press("slash")
        await pilot.press(*"norm")
        await pilot.pause()
        assert app.screen.query_one("#filter", Input).value == "norm"
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert rows and all("norm" in (r[0] + r[1]) for r in rows)
        assert "rms_norm" in [r[0] for r in rows]


@pytest.mark.asyncio
async def test_opening_a_problem_shows_reference_and_rooflines(make_app: Any) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("slash", *"rms_norm", "enter")
        table = app.screen.query_one("#problems-table", DataTable)
        ops = [table.get_row_at(i)[0] for i in range(table.row_count)]
        table.move_cursor(row=ops.index("rms_norm"))
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "ProblemDetailScreen" and screen.op == "rms_norm"
        shapes = screen.query_one("#shape-table", DataTable)
        assert shapes.row_count == len(app.data.problems["rms_norm"].shapes)
        first = shapes.get_row_at(0)
        assert first[7] in ("memory", "compute") and float(first[6]) > 0  # bound and T_SOL µs
        reference = str(screen.query_one("#reference", Static).content.code)
        assert "class Model" in reference
        sessions = screen.query_one("#detail-sessions", DataTable)
        assert sessions.row_count >= 1  # the shipped rms_norm example
        await pilot.press("escape")
        assert type(app.screen).__name__ == "ProblemsScreen"


def test_best_recorded_kernel_prefers_real_over_a_higher_partly_fallback_score(tmp_path: Any) -> None:
    """An op with one fallback shape is not real although its other shapes still add to its S_op (a session-2
    H200 report scored rope 0.449 that way); a real kernel at 0.30 is the better record."""
    import json

    from aka_tui.tui.records import report_bests

    def report(name: str, s_op: float, real: bool) -> None:
        data = {"hardware": {"name": "h200"}, "ops": [{"problem": "rope", "s_op": s_op, "real": real}]}
        (tmp_path / name).write_text(json.dumps(data))

    report("a-partly-fallback.json", 0.449, False)
    report("b-real.json", 0.30, True)
    report("c-real-worse.json", 0.20, True)
    best = report_bests([tmp_path])["rope"]
    assert (best.s_op, best.real, best.source) == (0.30, True, "b-real.json")


def test_best_recorded_kernels_are_compared_within_one_hardware(tmp_path: Any) -> None:
    """S is relative to a hardware's roofline (an H100's lower bandwidth gives the same kernel a higher S): the
    list shows each op's best on the hardware with records for the most ops, and an op recorded only elsewhere its
    best there."""
    import json

    from aka_tui.tui.records import report_bests

    def report(name: str, hardware: str, scores: dict[str, float]) -> None:
        data = {"hardware": {"name": hardware},
                "ops": [{"problem": op, "s_op": s_op, "real": True} for op, s_op in scores.items()]}
        (tmp_path / name).write_text(json.dumps(data))

    report("h200-suite.json", "h200", {"moe": 0.55, "gemm": 0.70, "rope": 0.58})
    report("h100-partial.json", "h100_sxm", {"moe": 0.76, "sampling": 0.23})
    report("h200-older.json", "h200", {"moe": 0.50})
    best = report_bests([tmp_path])
    assert (best["moe"].s_op, best["moe"].hardware) == (0.55, "h200")
    assert (best["sampling"].s_op, best["sampling"].hardware) == (0.23, "h100_sxm")
    assert best["gemm"].source == "h200-suite.json"


def test_reports_in_subdirectories_count_for_their_own_suite_only(tmp_path: Any) -> None:
    """A session's device runs are kept in a subdirectory of the reports; they count, but only for the suite they
    were run on (published operators share names with the shipped suite's); a report that predates recording its
    suite counts at the top level only."""
    import json

    from aka_tui.tui.records import report_bests

    def report(path: str, s_op: float, suite_dir: str | None) -> None:
        data: dict = {"hardware": {"name": "h200"}, "ops": [{"problem": "rms_norm", "s_op": s_op, "real": True}]}
        if suite_dir is not None:
            data["suite_dir"] = suite_dir
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(json.dumps(data))

    report("old.json", 0.60, None)
    report("run-2/suite.json", 0.72, "/somewhere/problems")
    report("run-2/published.json", 0.95, "../shared/other-suite")
    report("run-3/legacy.json", 0.99, None)
    best = report_bests([tmp_path], "problems")["rms_norm"]
    assert (best.s_op, best.source) == (0.72, "run-2/suite.json")
    assert report_bests([tmp_path], "other-suite")["rms_norm"].s_op == 0.95


@pytest.mark.asyncio
async def test_the_app_opens_a_published_suite_directory(tmp_path: Any) -> None:
    """`aka --suite DIR` on a published (Atrex-Bench format) directory: its operators, weights from its
    importance file; sessions, examples and the knowledge base stay the project's."""
    from aka_tui.tui.app import AkaApp
    from aka_tui.tui.config import TuiConfig
    from tests.conftest import DATA, REPO

    app = AkaApp(config=TuiConfig(sessions_dir=str(tmp_path / "sessions")), config_path=tmp_path / "c.json",
                 suite_dir=DATA / "atrex_published")
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        assert not app.load_error
        table = app.screen.query_one("#problems-table", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [r[0] for r in rows] == ["scaled_tanh_rows"]
        assert app.paths is not None and app.paths.kb_dir == REPO / "kb"
        assert app.paths.example_sessions_dir == REPO / "sessions" / "examples"
