"""The Port screen's helpers: the source picker shown before any migration exists, the write confirm, and the
conflict settle dialogs (a whole file: mine / new / merged; one conflict: mine / new)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, ProgressBar, Select, Static

from hipwizard.progress import Progress


class MigrationForm(Vertical):
    """Pick a CUDA source folder, an output folder and the output mode; ``Submitted`` carries them."""

    MODES = [("fork: a HIP copy of the tree", "fork"),
             ("dual-target: one source for NVIDIA and AMD (CUDA kept, compat header, guarded branches, a patch)",
              "dual")]

    class Submitted(Message):
        def __init__(self, src: str, out: str, mode: str = "fork") -> None:
            super().__init__()
            self.src = src
            self.out = out
            self.mode = mode

    def compose(self) -> ComposeResult:
        yield Static("No migration yet. Choose the CUDA source folder and where the HIP output goes; "
                     "hipwizard translates it, then you review every hunk.", id="setup-intro")
        yield Static("CUDA source folder")
        yield Input(placeholder="path/to/cuda/project", id="setup-src")
        yield Static("Output folder (HIP)")
        yield Input(placeholder="default: <source>-hip", id="setup-out")
        yield Static("Output mode (this workspace's choice)")
        yield Select(self.MODES, value="fork", allow_blank=False, id="setup-mode", compact=True)
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
        mode = self.query_one("#setup-mode", Select).value
        self.post_message(self.Submitted(src, out or src.rstrip("/") + "-hip", str(mode)))

    def choose_mode(self, mode: str) -> None:
        """Show ``mode`` ("fork" or "dual", the workspace's recorded choice) as chosen."""
        self.query_one("#setup-mode", Select).value = mode if mode in ("fork", "dual") else "fork"

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


class ResolveConflict(ModalScreen[str | None]):
    """Settle a write's conflict with the user's edits: m keeps the user's file, n takes the new result, g
    writes the merge with conflict markers; escape leaves it in conflict. Dismissed with the choice or None."""

    BINDINGS = [
        Binding("m", "answer('mine')", "Keep mine", id="review.resolve_mine"),
        Binding("n", "answer('new')", "Take new", id="review.resolve_new"),
        Binding("g", "answer('merged')", "Merged", id="review.resolve_merged"),
        Binding("escape", "answer(None)", "Cancel", id="review.resolve_cancel"),
    ]

    def __init__(self, rel: str, why: str) -> None:
        super().__init__()
        self.rel = rel
        self.why = why

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(f"✖ {self.rel}: {self.why}.\nYour file is kept as it is until you choose:\n"
                         "  m  keep mine (your file; the new result becomes the base of the next merge)\n"
                         "  n  take the new result (your edits in this file are replaced)\n"
                         "  g  write the merge with conflict markers, to edit by hand")
            with Horizontal(id="confirm-buttons"):
                yield Button("Mine (m)", id="resolve-mine", compact=True)
                yield Button("New (n)", id="resolve-new", variant="warning", compact=True)
                yield Button("Merged (g)", id="resolve-merged", compact=True)
                yield Button("Cancel (esc)", id="resolve-cancel", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        choice = (event.button.id or "").removeprefix("resolve-")
        self.dismiss(None if choice == "cancel" else choice)

    def action_answer(self, choice: str | None) -> None:
        self.dismiss(choice)


class ChooseRegion(ModalScreen[str | None]):
    """Decide one conflict of a file: m takes the user's lines, n the new result's; escape leaves it undecided.
    Both sides are shown (long sides cut, with the count of lines left out)."""

    BINDINGS = [
        Binding("m", "answer('mine')", "Mine", id="review.region_mine"),
        Binding("n", "answer('new')", "New", id="review.region_new"),
        Binding("escape", "answer(None)", "Cancel", id="review.region_cancel"),
    ]
    SHOWN = 6

    def __init__(self, hunk, total: int) -> None:
        super().__init__()
        self.hunk = hunk
        self.total = total

    def _side(self, lines: list[str]) -> str:
        shown = [f"    {x.rstrip()}" for x in lines[: self.SHOWN]] or ["    (nothing)"]
        if len(lines) > self.SHOWN:
            shown.append(f"    … {len(lines) - self.SHOWN} more line(s)")
        return "\n".join(shown)

    def compose(self) -> ComposeResult:
        h = self.hunk
        with Vertical(id="confirm-box"):
            yield Static(f"✖ {h.file}: conflict {h.index} of {self.total} (line {h.line}). "
                         f"{'Chosen: ' + h.choice if h.choice else 'Undecided'}.\n"
                         f"m  yours:\n{self._side(h.old)}\nn  new result:\n{self._side(h.new)}\n"
                         "The file is written once every conflict in it is decided.", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button("Mine (m)", id="region-mine", compact=True)
                yield Button("New (n)", id="region-new", variant="warning", compact=True)
                yield Button("Cancel (esc)", id="region-cancel", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        choice = (event.button.id or "").removeprefix("region-")
        self.dismiss(None if choice == "cancel" else choice)

    def action_answer(self, choice: str | None) -> None:
        self.dismiss(choice)
