"""The Doctor's paste box: a text area for a terminal log (any number of tool outputs, prompts or not).

Layout and wiring only: ``hipwizard.doctor.parse_paste`` says what it recognises, shown live under the
box; a paste with nothing recognisable stays open with that message inline. ``ctrl+s`` checks it (the screen
runs ``diagnose_paste``), ``escape`` cancels.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from hipwizard.doctor import parse_paste
from hipwizard.textsafe import (
    markup as escape,  # text from outside: inert, markup shown as text
)


class PasteBox(ModalScreen[str | None]):
    """Returns the pasted text to check, or None when cancelled."""

    DEFAULT_CSS = """
    PasteBox { align: center middle; }
    #paste-box { width: 90%; height: 85%; border: round $accent; padding: 0 1; background: $surface; }
    #paste-text { height: 1fr; }
    #paste-status { height: auto; margin-top: 1; }
    """
    BINDINGS = [
        Binding("ctrl+s", "check", "Check the paste", id="doctor.paste.check"),
        Binding("escape", "cancel", "Cancel", id="doctor.paste.cancel"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="paste-box"):
            yield Static("[b]Paste tool outputs[/b] (rocminfo, amd-smi, rocm-smi, collect_env, pip list, nvidia-smi, "
                         "lspci ...; with or without prompts).  ctrl+s check · esc cancel")
            yield TextArea(id="paste-text")
            yield Static("○ nothing pasted yet", id="paste-status")

    def on_mount(self) -> None:
        self.query_one("#paste-text", TextArea).focus()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.query_one("#paste-status", Static).update(self._status(event.text_area.text)[1])

    @staticmethod
    def _status(text: str) -> tuple[bool, str]:
        if not text.strip():
            return False, "○ nothing pasted yet"
        result = parse_paste(text)
        if not result.recognised:
            return False, ("✖ no tool output recognised: paste rocminfo, amd-smi, rocm-smi, collect_env, pip list, "
                           "nvidia-smi or lspci output")
        return True, "✔ " + escape(result.summary())

    def action_check(self) -> None:
        text = self.query_one("#paste-text", TextArea).text
        ok, message = self._status(text)
        self.query_one("#paste-status", Static).update(message)
        if ok:
            self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
