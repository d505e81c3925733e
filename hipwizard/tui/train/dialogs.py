"""The Train screen's confirmation: launch and stop ask first (y or enter confirms, n or escape cancels)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from hipwizard import train


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


class CalibrateDialog(ModalScreen["tuple[int, int] | None"]):
    """How many of the advisor's candidates to run and how many steps each (K and N of ``train calibrate``);
    dismisses with (K, N), or None when cancelled. A bad number is said under the fields and nothing starts."""

    DEFAULT_CSS = """
    CalibrateDialog { align: center middle; }
    CalibrateDialog #calibrate-box {
        width: 64; max-width: 100%; height: auto; border: round $primary; background: $surface; padding: 1 2;
    }
    CalibrateDialog .calibrate-row { height: 1; margin-top: 1; }
    CalibrateDialog .calibrate-row Label { width: 26; }
    CalibrateDialog .calibrate-row Input { width: 10; border: none; height: 1; }
    CalibrateDialog #calibrate-error { margin-top: 1; }
    CalibrateDialog #calibrate-buttons { height: 1; margin-top: 1; }
    CalibrateDialog #calibrate-buttons Button { margin-right: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="train.calibrate_cancel")]

    def __init__(self, candidates: int, steps: int, warmup: int) -> None:
        super().__init__()
        self.candidates, self.steps, self.warmup = candidates, steps, warmup

    def compose(self) -> ComposeResult:
        with Vertical(id="calibrate-box"):
            yield Static("Calibrate: run the advisor's top candidates for a few real steps each on this machine "
                         f"(the first {self.warmup} steps of each are warm-up, not timed).", id="calibrate-text")
            with Horizontal(classes="calibrate-row"):
                yield Label("candidates (1-16)")
                yield Input(str(self.candidates), id="calibrate-candidates", restrict=r"[0-9]*", max_length=2)
            with Horizontal(classes="calibrate-row"):
                yield Label(f"steps each ({self.warmup + 2}-1000)")
                yield Input(str(self.steps), id="calibrate-steps", restrict=r"[0-9]*", max_length=4)
            yield Static("", id="calibrate-error")
            with Horizontal(id="calibrate-buttons"):
                yield Button("Calibrate (enter)", id="calibrate-go", variant="primary", compact=True)
                yield Button("Cancel (esc)", id="calibrate-cancel", compact=True)

    def problem(self) -> str | tuple[int, int]:
        """(K, N), or what is wrong with them (the CLI's bounds)."""
        raw_k = self.query_one("#calibrate-candidates", Input).value.strip()
        raw_n = self.query_one("#calibrate-steps", Input).value.strip()
        for name, raw in (("candidates", raw_k), ("steps", raw_n)):
            if not raw.isdigit():
                return f"✖ {name} must be a whole number, not {raw or 'empty'}"
        problem = train.counts_problem(int(raw_k), int(raw_n), self.warmup)
        return f"✖ {problem}" if problem else (int(raw_k), int(raw_n))

    def _go(self) -> None:
        got = self.problem()
        if isinstance(got, str):
            self.query_one("#calibrate-error", Static).update(got)
            return
        self.dismiss(got)

    def on_input_submitted(self, event) -> None:
        event.stop()
        self._go()

    def on_input_changed(self, event) -> None:
        self.query_one("#calibrate-error", Static).update("")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "calibrate-go":
            self._go()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
