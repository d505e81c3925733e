"""Errors that the CLI turns into one clear line and exit code 2 (never a traceback)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user: a missing file, a malformed config, an unknown option value.

    The message is shown as is, on one line, and the CLI exits with code 2. It speaks the user's words, not
    a face's: ``field`` names the value at fault (``"vram"``, ``"gpus"``) when there is one, so the CLI can
    name its flag (``--vram``) and the TUI can mark its input.
    """

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
