"""Small modal dialogs: a kernel/entry editor with validation, a path prompt, a yes/no confirmation."""

from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea


class TextEditor(ModalScreen[str | None]):
    """Edit text in a TextArea; ctrl+s saves (after `validate` returns no message), escape cancels."""

    BINDINGS = [Binding("ctrl+s", "save", "Save", id="editor.save", priority=True),
                Binding("escape", "cancel", "Cancel", id="editor.cancel", priority=True)]
    DEFAULT_CSS = """
    TextEditor { align: center middle; }
    TextEditor > Vertical { width: 95%; height: 92%; border: thick $accent; background: $surface; }
    TextEditor TextArea { height: 1fr; }
    TextEditor #editor-message { height: auto; color: $error; padding: 0 1; }
    TextEditor #editor-title { padding: 0 1; text-style: bold; }
    """

    def __init__(self, title: str, text: str, validate: Callable[[str], str] | None = None, message: str = "") -> None:
        super().__init__()
        self.title_text, self.text, self.validate, self.message = title, text, validate, message

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"{self.title_text} — ctrl+s save · escape cancel", id="editor-title")
            yield TextArea(self.text, id="editor-area", show_line_numbers=True, tab_behavior="indent")
            yield Static(self.message, id="editor-message")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        text = self.query_one(TextArea).text
        message = self.validate(text) if self.validate else ""
        if message:
            self.query_one("#editor-message", Static).update(message)
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PathPrompt(ModalScreen[str | None]):
    """Ask for a file path (enter confirms, escape cancels)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]
    DEFAULT_CSS = """
    PathPrompt { align: center middle; }
    PathPrompt > Vertical { width: 90; max-width: 96%; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    PathPrompt Label { width: 100%; }
    """

    def __init__(self, question: str, default: str) -> None:
        super().__init__()
        self.question, self.default = question, default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(self.default, id="path-input")
            yield Label("enter: confirm · escape: cancel", classes="banner")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """Yes / no."""

    BINDINGS = [Binding("y", "answer(True)", "Yes", id="confirm.yes"),
                Binding("n,escape", "answer(False)", "No", id="confirm.no")]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical { width: 80; max-width: 96%; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    Confirm Horizontal { height: auto; margin-top: 1; }
    Confirm Label { width: 100%; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
