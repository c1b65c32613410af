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
**ctrl+p** command palette (this screen's actions, screens, search, continue a session, optimize an op) ·
**ctrl+q** quit. The footer shows the shown screen's main keys.

Moving around: **tab** / **shift+tab** move the focus between the panels (lists, the tab bar, the code);
the arrow keys then work inside the focused panel. **escape** closes a dialog or a zoomed panel.

## Problems (F2)
Type in the filter box (or **/**) to filter by op, family, dtype or kernel; **s** sorts by the next column,
**r** reverses (▲ / ▼ marks the sorted column); clicking a header sorts by it. **enter** opens the problem
(reference, shapes, roofline per shape, recorded sessions; **p** replays one); **o** opens a live session.

## Session (F3)
**s** start, or continue a finished or recorded session (budgets from Settings apply; the proposer and what
defines the session stay) · **n** new session · **space** pause/resume at the next iteration boundary ·
**x** stop · **a** accept the selected candidate (git tag) and export it · **e** edit it ($VISUAL/$EDITOR, or
the in-app editor; the edit is evaluated, recorded as your commit, and the agent continues from it; before any
session, **e** writes a kernel of your own that starts it) ·
**w** export to a file (with a provenance header).
**i** focuses the iteration list (up/down select what the panels show) · **t** switches the code tabs
(Source, Diff, Side by side, Decision; Roofline when narrow) · **z** zooms the tabs to the whole screen.
The list's *reason* column says why a candidate was accepted or rejected; the Decision tab says which path
produced it (the knowledge base's kernel, a transfer, a compiler seed, the model, a person; "via …" in the metrics
line too) and has the re-measured samples. An operator without a knowledge-base kernel starts from a transfer or a
compiler seed, as `aka optimize` does (the agent log shows the search).

## Replay (F4)
**f** focuses the sessions list; **enter** opens one. **left/right** or **[ / ]** step through iterations,
**home/end** jump (when the tab bar has focus, left/right switch tabs instead) · **i** the iteration list ·
**t** next tab · **z** zoom · **m** re-measures the shown candidate here (the "Here vs recorded" tab) ·
**c** continues the session in the Session screen (a shipped example continues in a copy) · **w** export.

## Knowledge (F5)
**/** search (the first search loads the embedding model, ~5-10 s) · **a** add · **e** edit · **d** delete ·
on a pending entry: **y** accept, **n** reject, **e** edit. Entries added on disk (`aka kb add --pending`)
appear within a few seconds.

## Settings (F6)
**ctrl+s** saves to the config file. The API key is read from `ANTHROPIC_API_KEY` only; its status is shown,
never the key.
"""


class HelpScreen(ModalScreen[None]):
    """Keys and screens."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 98%; height: 90%; border: thick $accent; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
