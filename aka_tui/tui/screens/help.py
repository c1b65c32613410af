"""The help screen: screens and their keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# aka — keys

Global: **F1** help · **F2** Problems · **F3** Session · **F4** Replay · **F5** Knowledge · **F6** Settings ·
**ctrl+p** command palette · **ctrl+q** quit. Bindings of the focused screen are in the footer.

## Problems (F2)
Type in the filter box (or **/**) to filter by op or family; **s** sorts by the next column, **r** reverses;
clicking a column header sorts by it. **enter** opens the problem (reference, shapes, roofline per shape,
recorded sessions); **o** opens a live session on it.

## Session (F3)
**s** start (or continue) · **space** pause/resume at the next iteration boundary · **x** stop ·
**a** accept the selected candidate (git tag) and export it · **e** edit it (in-app editor; the edit is
evaluated, recorded as your commit, and the agent continues from it) · **w** export to a file.
Up/down in the iteration list selects what the panels show.

## Replay (F4)
Pick a session (**enter**); **left/right** or **[ / ]** step through iterations, **home/end** jump;
**m** re-measures the shown candidate on this machine (not recorded).

## Knowledge (F5)
**/** search (the first search loads the embedding model, ~5-10 s) · **a** add · **e** edit · **d** delete ·
on a pending entry: **y** accept, **n** reject, **e** edit.

## Settings (F6)
**ctrl+s** saves to the config file. The API key is read from `ANTHROPIC_API_KEY` only; its status is shown,
never the key.
"""


class HelpScreen(ModalScreen[None]):
    """Keys and screens."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; height: 80%; border: thick $accent; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
