"""The highlighted kernel's spec as a form (the Parity screen's ``e``): one input per field, checked on save.

Fields and checks are the step's (``parity.kernel_spec_form`` / ``parity.edit_kernel``): a bad field gets its
one-line message right under it (the field is named by the ``UserError``), the form stays open, and nothing is
written until every field reads. Saved edits live in the workspace's spec file and survive a redraft.
"""

from __future__ import annotations

from rich.markup import escape as rich_escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from hipwizard import parity
from hipwizard.errors import UserError
from hipwizard.textsafe import inert_line
from hipwizard.workspace import Workspace

HELP = {
    "dims": "each dimension's value, NAME=VALUE, comma-separated (a swept one is varied by the sweep)",
    "swept": "the dimensions the sweep varies, the innermost last",
    "grid": "grid x, y, z: C++ expressions over the dimensions",
    "block": "block x, y, z",
    "shared_bytes": "dynamic shared memory in bytes (0 for none)",
    "reference": "optional: a torch expression over the read buffers, the oracle instead of the float64 twin",
}


def _field_id(name: str) -> str:
    return "kf-" + "".join(ch if ch.isalnum() else "-" for ch in name)


class KernelSpecForm(ModalScreen[bool]):
    """Edit one kernel's spec; dismissed with True once saved, False on cancel."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="parity.spec_save"),
        Binding("escape", "cancel", "Cancel", id="parity.spec_cancel"),
    ]

    def __init__(self, ws: Workspace, file: str, kernel: str, fields: dict[str, str]) -> None:
        super().__init__()
        self.ws, self.file, self.kernel = ws, file, kernel
        self.fields = fields

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="kernel-form"):
            yield Static(rich_escape(f"spec of {self.kernel} ({self.file}) — ctrl+s saves, escape cancels"),
                         id="kernel-form-title")
            for name, value in self.fields.items():
                hint = HELP.get(name) or ("elements of buffer " + name.split(":", 1)[1] + " the kernel reaches"
                                          if name.startswith("extent:") else "")
                yield Label(rich_escape(f"{name} — {hint}"))
                yield Input(value=value, id=_field_id(name))
                yield Static("", id=_field_id(name) + "-error", classes="kernel-form-error")
            with Horizontal(id="kernel-form-buttons"):
                yield Button("Save (ctrl+s)", id="kernel-form-save", variant="primary", compact=True)
                yield Button("Cancel (esc)", id="kernel-form-cancel", compact=True)

    def values(self) -> dict[str, str]:
        return {name: self.query_one("#" + _field_id(name), Input).value for name in self.fields}

    def on_input_changed(self, event: Input.Changed) -> None:
        error = self.query("#" + (event.input.id or "") + "-error")
        if error:
            error.first(Static).update("")  # a field being edited drops its old message

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "kernel-form-save":
            self.action_save()
        else:
            self.action_cancel()

    def action_save(self) -> None:
        for err in self.query(".kernel-form-error"):
            if isinstance(err, Static):
                err.update("")
        try:
            parity.edit_kernel(self.ws, self.file, self.kernel, self.values())
        except UserError as exc:
            field = exc.field if exc.field in self.fields else next(iter(self.fields))
            self.query_one("#" + _field_id(field) + "-error", Static).update(rich_escape("✖ " + inert_line(str(exc))))
            self.query_one("#" + _field_id(field), Input).focus()
            return
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
