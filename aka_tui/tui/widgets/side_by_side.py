"""A side-by-side diff: the incumbent on the left, the candidate on the right, changed lines aligned."""

from __future__ import annotations

import difflib

from rich.table import Table
from rich.text import Text

STYLES = {"delete": "red", "insert": "green", "replace": "yellow", "equal": ""}


def _cell(number: int | None, line: str | None, style: str) -> tuple[Text, Text]:
    return (Text("" if number is None else str(number), style="dim"),
            Text("" if line is None else line.expandtabs(4), style=style))


def side_by_side(old: str, new: str, old_title: str = "incumbent", new_title: str = "candidate",
                 context_lines: int | None = None) -> Table | Text:
    """Both files in two columns (line number, text) with deletions red, insertions green, changes yellow.

    `context_lines`: keep only this many unchanged lines around each change (None keeps every line)."""
    if not old:
        return Text("(no incumbent yet: this is the first candidate)", style="dim")
    old_lines, new_lines = old.splitlines(), new.splitlines()
    table = Table(box=None, pad_edge=False, expand=True, show_header=True, header_style="bold")
    table.add_column("", justify="right", no_wrap=True, width=4)
    table.add_column(old_title, ratio=1, no_wrap=True, overflow="crop")
    table.add_column("", justify="right", no_wrap=True, width=4)
    table.add_column(new_title, ratio=1, no_wrap=True, overflow="crop")
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    groups = matcher.get_grouped_opcodes(context_lines) if context_lines is not None else [matcher.get_opcodes()]
    first = True
    for group in groups:
        if not first:
            table.add_row(Text("⋮", style="dim"), Text(""), Text("⋮", style="dim"), Text(""))
        first = False
        for tag, i1, i2, j1, j2 in group:
            style = STYLES[tag]
            for k in range(max(i2 - i1, j2 - j1)):
                left = _cell(i1 + k + 1, old_lines[i1 + k], style) if i1 + k < i2 else _cell(None, None, "")
                right = _cell(j1 + k + 1, new_lines[j1 + k], style) if j1 + k < j2 else _cell(None, None, "")
                table.add_row(*left, *right)
    if matcher.ratio() == 1.0:
        return Text("(identical to the incumbent)", style="dim")
    return table
