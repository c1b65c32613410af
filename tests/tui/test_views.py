"""What the panels say about a recorded candidate: decisions in words, metrics that fit the width, units,
registers / spills / occupancy from a stored GPU-shaped result, % of the calibrated copy bandwidth."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from aka_tui.bench.problem.lookup import load_problem
from aka_tui.tui.decision import Margins, Recorded, explain
from aka_tui.tui.iteration_view import IterationFacts, build_views, make_view
from aka_tui.tui.widgets.metrics import PanelContext, fitting_columns, metrics_renderable, panel_context
from aka_tui.tui.widgets.side_by_side import side_by_side
from tests.conftest import PROBLEMS
from tests.tui.conftest import EXAMPLES

MARGINS = Margins(noise_rel=0.03, close_rel=0.10)
EXAMPLE = EXAMPLES / "rms_norm-example"


def _text(renderable: Any, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_a_rejection_despite_a_higher_single_evaluation_says_why() -> None:
    """One evaluation said 0.0007 against an incumbent of 0.0004; the interleaved re-measurement did not."""
    remeasure = {"rounds": 3, "rounds_planned": 3, "accepted": False, "reason": "",
                 "samples": {"incumbent": [0.00041, 0.00043, 0.00040], "candidate": [0.00039, 0.00070, 0.00038]}}
    short, full = explain(Recorded(False, False, True, True, 0.0007, 0.0004, remeasure=remeasure), MARGINS)
    assert short == "not > +3%: median 0.00039 vs 0.00041 (-5%)"
    assert "one evaluation gave S_op 0.0007 against 0.0004" in full[0]
    assert "candidate 0.00039 [0.00038–0.0007]" in "\n".join(full)  # the spread of the samples
    assert "incumbent 0.00041 [0.0004–0.00043]" in "\n".join(full)


@pytest.mark.parametrize(("recorded", "short"), [
    (Recorded(True, False, True, True, 0.5, None), "first correct, real kernel"),
    (Recorded(False, False, False, True, 0.0, 0.5, error="s1: wrong_output: max abs 3"), "incorrect"),
    (Recorded(False, False, True, False, 0.0, 0.5, fallback_reason="PyTorch computed"), "fallback"),
    (Recorded(False, False, True, True, 0.3, 0.5, screened_out=True), "screened: 0.3 vs 0.5"),
    (Recorded(True, False, True, True, 0.6, 0.5), "+20% over 0.5"),
    (Recorded(False, False, True, True, 0.51, 0.5), "not > +3% over 0.5"),
    (Recorded(False, False, True, True, 0.6, 0.5, remeasure={"rounds": 0, "rounds_planned": 3, "samples": {},
                                                             "reason": "not re-measured: budget"}),
     "win not verified"),
    (Recorded(True, True, True, True, 0.2, 0.5), "your edit: correct, real"),
])
def test_every_verdict_has_a_reason(recorded: Recorded, short: str) -> None:
    assert explain(recorded, MARGINS)[0] == short


def test_recorded_views_carry_reasons_microseconds_and_the_interpreter_note() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    from aka_tui.bench.roofline.hardware import get_profile

    views, problems = build_views(EXAMPLE, problem, get_profile("cpu"))
    assert not problems and [v.verdict for v in views] == ["accepted", "accepted", "rejected"]
    assert views[0].reason == "first correct, real kernel" and views[2].reason.startswith("not > +3% over")
    text = _text(metrics_renderable(views[1], PanelContext("cpu"), 160), 160)
    assert "T µs" in text and "T_SOL µs" in text and "T ms" not in text
    assert "registers / spills / occupancy: n/a (interpreter)" in text
    assert "copy bandwidth not calibrated" in text


def test_metrics_keep_the_columns_that_fit() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    from aka_tui.bench.roofline.hardware import get_profile

    view = build_views(EXAMPLE, problem, get_profile("cpu"))[0][1]
    shown, left_out = fitting_columns(view, PanelContext("cpu"), 64)
    headers = [c.header for c in shown]
    assert {"shape", "T µs", "S"} <= set(headers) and left_out
    text = _text(metrics_renderable(view, PanelContext("cpu"), 64), 64)
    table_lines = [line for line in text.splitlines() if line.startswith("smoke_")]
    assert table_lines and all(len(line.rstrip()) <= 64 and "…" not in line for line in table_lines)
    assert "not shown at this width" in text
    wide, none_left = fitting_columns(view, PanelContext("cpu"), 200)
    assert not none_left and len(wide) == len(shown) + len(left_out)


def _gpu_shaped_result() -> dict[str, Any]:
    """The recorded H200 example's result with kernel resources as the evaluator now stores them on a GPU
    (n_regs etc. here are display test values, not a measurement)."""
    folder = EXAMPLES / "layer_norm-h200-example" / "iterations"
    result = json.loads(sorted(folder.glob("*/result.json"))[0].read_text())
    result = copy.deepcopy(result)
    for shape in result["shapes"]:
        if shape.get("audit") and shape["audit"].get("own_kernels"):
            name = next(iter(shape["audit"]["own_kernels"]))
            shape["audit"]["kernel_resources"] = {name: {
                "n_regs": 40, "n_spills": 0, "shared_bytes": 2048, "num_warps": 8, "num_stages": 3,
                "occupancy": 0.75, "blocks_per_sm": 6, "occupancy_limit": "registers"}}
    return result


def test_registers_spills_occupancy_and_copy_bandwidth_from_a_stored_result(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from aka_tui.bench.roofline.hardware import get_profile, save_measured, with_measurements

    monkeypatch.setenv("AKA_HOME", str(tmp_path))
    h200 = get_profile("h200")
    assert panel_context(h200).copy_gbps is None  # no measured profile yet: "not calibrated"
    save_measured(with_measurements(h200, {}, 4.27, 2.5, {"copy_tbps": 4.27}))
    context = panel_context(h200)
    assert context.copy_gbps == pytest.approx(4270.0)
    problem = load_problem(PROBLEMS / "layer_norm")
    view = make_view(problem, h200, 1, "# kernel", _gpu_shaped_result(), {"rationale": "r"},
                     IterationFacts(True), None)
    assert view.device.startswith("cuda")
    text = _text(metrics_renderable(view, context, 200), 200)
    assert "40 regs · 0 spills · 8 warps · 3 stages · 2 KiB smem · occupancy 75% (registers)" in text
    assert "% copy: of the calibrated copy bandwidth 4270 GB/s" in text
    shape = next(s for s in view.shapes if s.achieved_gbps)
    assert shape.copy_pct(context.copy_gbps) == pytest.approx(shape.achieved_gbps / 4270.0 * 100)
    assert f"{shape.copy_pct(context.copy_gbps):.3g}" in text


def test_side_by_side_aligns_changed_lines() -> None:
    old = "a = 1\nb = 2\nc = 3\n"
    new = "a = 1\nb = 20\nc = 3\nd = 4\n"
    text = _text(side_by_side(old, new, "incumbent", "candidate"), 60)
    changed = next(line for line in text.splitlines() if "b = 2" in line)
    assert "b = 20" in changed  # the change sits on one row, old left, new right
    assert any("d = 4" in line and line.strip().startswith("4") for line in text.splitlines())
    assert "identical" in _text(side_by_side(old, old), 60)
