"""The Train screen's confirmation: launch and stop ask first (y or enter confirms, n or escape cancels)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmAction(ModalScreen[bool]):
    """A yes/no question about one action on a run; dismisses with True when confirmed."""

    DEFAULT_CSS = """
    ConfirmAction { align: center middle; }
    ConfirmAction #confirm-box {
        width: 64; max-width: 100%; height: auto; border: round $warning; background: $surface; padding: 1 2;
    }
    ConfirmAction #confirm-buttons { height: 1; margin-top: 1; }
    ConfirmAction #confirm-buttons Button { margin-right: 2; }
    """
    BINDINGS = [
        Binding("y,enter", "answer(True)", "Confirm", id="train.confirm"),
        Binding("n,escape", "answer(False)", "Cancel", id="train.cancel"),
    ]

    def __init__(self, question: str, detail: str = "", verb: str = "Yes") -> None:
        super().__init__()
        self.question, self.detail, self.verb = question, detail, verb

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question + (f"\n{self.detail}" if self.detail else ""), id="confirm-text")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.verb} (y)", id="confirm-yes", variant="warning", compact=True)
                yield Button("Cancel (n)", id="confirm-no", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
