"""The agent's event kinds are one typed list: every kind emitted and every kind the app renders is in it."""

from __future__ import annotations

import ast
from typing import get_args

from aka_tui.agent.loop import AgentEventKind
from tests.conftest import REPO


def _emitted_kinds() -> set[str]:
    kinds = set()
    for path in (REPO / "aka_tui" / "agent").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("_emit", "emit") and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                kinds.add(node.args[0].value)
    return kinds


def test_every_emitted_and_rendered_kind_is_declared() -> None:
    from aka_tui.tui.event_lines import LINES

    declared = set(get_args(AgentEventKind))
    emitted = _emitted_kinds()
    assert len(emitted) >= 10 and emitted <= declared, emitted - declared
    assert set(LINES) <= declared, set(LINES) - declared
    assert declared <= emitted, declared - emitted


def test_an_incorrect_candidates_log_line_says_why() -> None:
    """The app's log names the first failure of an incorrect candidate, and adds nothing for a correct one or an
    event recorded before events carried it."""
    from aka_tui.tui.event_lines import event_line

    wrong = {"iteration": 2, "s_op": 0.0, "correct": False, "real": False, "accepted": False,
             "why": "8: compile_error: PTXAS error: insufficient registers"}
    assert event_line("candidate_evaluated", wrong).endswith("rejected — 8: compile_error: PTXAS error: "
                                                               "insufficient registers")
    screened = {"s_op": 0.1, "incumbent_s": 0.2, "promising": False, "correct": False, "why": "3: wrong_output"}
    assert event_line("candidate_screened", screened).endswith("not promising — 3: wrong_output")
    right = {**wrong, "correct": True, "real": True, "accepted": True}
    assert event_line("candidate_evaluated", right).endswith("ACCEPTED")
    old = {k: v for k, v in wrong.items() if k != "why"}
    assert event_line("candidate_evaluated", old).endswith("rejected")
