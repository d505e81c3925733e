"""The Port screen's helpers: the source picker shown before any migration exists, and the write confirm."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, ProgressBar, Static

from hipwizard.progress import Progress


class MigrationForm(Vertical):
    """Pick a CUDA source folder and an output folder; ``Submitted`` carries both."""

    class Submitted(Message):
        def __init__(self, src: str, out: str) -> None:
            super().__init__()
            self.src = src
            self.out = out

    def compose(self) -> ComposeResult:
        yield Static("No migration yet. Choose the CUDA source folder and where the HIP output goes; "
                     "hipwizard translates it, then you review every hunk.", id="setup-intro")
        yield Static("CUDA source folder")
        yield Input(placeholder="path/to/cuda/project", id="setup-src")
        yield Static("Output folder (HIP)")
        yield Input(placeholder="default: <source>-hip", id="setup-out")
        yield Button("Translate ▶", id="setup-go", variant="primary", compact=True)
        yield ProgressBar(id="setup-progress", show_eta=False)
        yield Static("", id="setup-status")

    def on_mount(self) -> None:
        self.query_one("#setup-progress", ProgressBar).display = False  # shown once a translation reports

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "setup-src":
            self.query_one("#setup-out", Input).focus()
        else:
            self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._submit()

    def _submit(self) -> None:
        src = self.query_one("#setup-src", Input).value.strip()
        out = self.query_one("#setup-out", Input).value.strip()
        if not src:
            self.status("⚠ enter the CUDA source folder first")
            return
        self.post_message(self.Submitted(src, out or src.rstrip("/") + "-hip"))

    def status(self, text: str) -> None:
        self.query_one("#setup-status", Static).update(text)

    def progress(self, progress: Progress) -> None:
        """Show how far the translation got (the bar, and the file at hand)."""
        bar = self.query_one("#setup-progress", ProgressBar)
        bar.display = True
        bar.update(total=max(progress.total or 1, 1), progress=progress.done or 0)
        self.status(f"◐ {progress.text()} …")


class ConfirmWrite(ModalScreen[bool]):
    """Writing with pending hunks asks first: pending hunks keep the original text."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Write", id="review.confirm_write"),
        Binding("n,escape", "answer(False)", "Cancel", id="review.cancel_write"),
    ]

    def __init__(self, pending: int) -> None:
        super().__init__()
        self.pending = pending

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(f"⚠ {self.pending} hunk(s) are still pending.\n"
                         "Pending hunks keep the original CUDA text in the output. Write anyway?")
            with Horizontal(id="confirm-buttons"):
                yield Button("Write (y)", id="confirm-yes", variant="warning", compact=True)
                yield Button("Cancel (n)", id="confirm-no", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
