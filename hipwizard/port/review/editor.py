"""Editing the translated side of a hunk in the user's ``$EDITOR``.

The editor needs the terminal (it is interactive), so it is started directly with inherited stdin/stdout
rather than through the runner seam, which captures output. The screen suspends itself around the call.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.translation.hunks import split_lines

# Tried in order when neither $VISUAL nor $EDITOR is set (Debian's choice first, then what most systems have).
FALLBACK_EDITORS = ("sensible-editor", "editor", "nano", "vi")


def editor_command() -> list[str]:
    """``$VISUAL`` or ``$EDITOR`` as an argv list, else the first of ``FALLBACK_EDITORS`` on the PATH;
    ``UserError`` when there is none (said before the terminal is handed to anything)."""
    value = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not value or not value.strip():
        found = next((path for name in FALLBACK_EDITORS if (path := shutil.which(name))), None)
        if found is None:
            raise UserError("no editor: set $EDITOR (for example `export EDITOR=nano`) to edit a hunk; none of "
                            + ", ".join(FALLBACK_EDITORS) + " was found on the PATH")
        return [found]
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise UserError(f"$EDITOR {value!r} cannot be parsed: {exc}") from None


def edit_lines(lines: list[str], *, suffix: str = ".hip.cpp", argv: list[str] | None = None) -> list[str] | None:
    """Open ``lines`` in the editor (``argv``, default ``editor_command()``); return the edited lines (endings
    kept), or None when unchanged.

    Raises ``UserError`` when the editor is unset, missing, or exits with an error (the text is then
    left as it was).
    """
    argv = argv or editor_command()
    text = "".join(x if x.endswith("\n") else x + "\n" for x in lines)
    fd, name = tempfile.mkstemp(prefix="hipwizard-hunk-", suffix=suffix)
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        try:
            proc = subprocess.run([*argv, str(path)])
        except OSError as exc:
            raise UserError(f"cannot start editor {argv[0]!r}: {exc.strerror or exc}") from None
        if proc.returncode != 0:
            raise UserError(f"editor {argv[0]!r} exited with code {proc.returncode}; the hunk was not changed")
        edited = path.read_text(encoding="utf-8", errors="surrogateescape")
    finally:
        path.unlink(missing_ok=True)
    if edited == text:
        return None
    return split_lines(edited)
