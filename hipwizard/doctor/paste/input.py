"""Reading a paste for ``doctor --paste``: a regular file or stdin, with a cap that is said out loud.

A device (``/dev/zero``), a FIFO or a folder is refused (reading one may never end); stdin is read up to the
cap. A paste over ``PASTE_CAP`` is cut at the last whole line before the cap, never mid-line (a GPU name cut
to "AMD Instinc" changed the verdict), and ``PasteInput.note`` says what was left out: the CLI prints it and
the report carries it (``DoctorReport.notes``, in ``--json`` too).
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from hipwizard.errors import UserError

PASTE_CAP = 8 * 2**20


@dataclass(frozen=True)
class PasteInput:
    text: str
    label: str  # the file's name, or "stdin"
    note: str = ""  # "" when the whole paste was read


def read_paste(name: str, stdin: BinaryIO | TextIO | None = None, cap: int = PASTE_CAP) -> PasteInput:
    """The paste named ``name`` ('-' is ``stdin``, a binary stream, or a text one). UserError for a missing, unreadable,
    binary or non-regular file."""
    if name == "-":
        if stdin is None:
            raise UserError("--paste -: there is no stdin to read")
        try:
            raw = stdin.read(cap + 1)
        except OSError as exc:
            raise UserError(f"--paste -: cannot read stdin ({exc.strerror or exc})") from None
        return _decoded(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogateescape"), "-", "stdin", cap)
    path = Path(name).expanduser()
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise UserError(f"--paste {name}: cannot read it ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a device, FIFO or socket"
        raise UserError(f"--paste {name}: {kind}, not a regular file (use --paste - to read stdin)")
    try:
        with path.open("rb") as fh:
            raw = fh.read(cap + 1)
    except OSError as exc:
        raise UserError(f"--paste {name}: cannot read it ({exc.strerror or exc})") from None
    return _decoded(raw, name, path.name, cap)


def _decoded(raw: bytes, name: str, label: str, cap: int) -> PasteInput:
    if b"\x00" in raw[:4096]:
        raise UserError(f"--paste {name}: looks binary (NUL bytes), not a terminal log")
    note = ""
    if len(raw) > cap:
        end = raw.rfind(b"\n", 0, cap) + 1  # the last whole line within the cap
        if end == 0:
            raise UserError(f"--paste {name}: its first line is longer than {_mib(cap)}, not a terminal log")
        raw = raw[:end]
        lines = raw.count(b"\n")
        note = (f"the paste is larger than {_mib(cap)}: only its first {lines} whole lines ({_mib(end)}) were "
                f"read, the rest was left out; paste the tool outputs alone for a full check")
    return PasteInput(raw.decode("utf-8", errors="replace"), label, note)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n % 2**20 else f"{n // 2**20} MiB"
