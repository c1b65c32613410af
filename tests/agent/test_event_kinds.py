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
