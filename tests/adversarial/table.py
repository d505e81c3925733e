"""The adversarial table's machinery: one ``Case`` per row, and the checks every row gets.

A row names the command (``argv``, with ``{tmp}`` standing for the row's temporary folder), builds its
input in that folder (``build``), and says what must come out: the exit code, words in the message,
files that must not change, must not appear, or must appear. Every row also gets the rules that hold for
every command: never a traceback; bad input (exit 2) is exactly one line on stderr, ``hipwizard: error:``
then what is wrong; a check that failed (exit 1) says why.
"""

from __future__ import annotations

import hashlib
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hipwizard.cli import main


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    build: Callable[[Path], None]
    code: int
    words: tuple[str, ...] = ()  # each must be in the message (stderr for exit 2, else stdout + stderr)
    not_words: tuple[str, ...] = ()  # none may be anywhere in the output
    unchanged: tuple[str, ...] = ()  # relative paths (files or folders) whose content must not change
    absent: tuple[str, ...] = ()  # relative paths that must not exist afterwards
    appear: tuple[str, ...] = ()  # relative paths that must exist afterwards
    stdout_empty: bool | None = None  # default: True for exit 2


ROW_LIMIT_S = 60  # a command that hangs on bad input fails its row instead of stalling the suite


class RowTimedOut(BaseException):
    """Not an Exception: the CLI's own handlers must not turn it into an error line."""


def _too_long(signum, frame):
    raise RowTimedOut(f"the command ran past {ROW_LIMIT_S} s")


def nothing(tmp: Path) -> None:
    """A row whose input is only its argv."""


def fingerprint(path: Path) -> str | None:
    """Content hash of a file or a whole folder (names and bytes), None when absent."""
    if not path.exists() and not path.is_symlink():
        return None
    h = hashlib.sha256()
    items = [path] if not path.is_dir() else sorted(p for p in path.rglob("*"))
    for p in items:
        h.update(str(p.relative_to(path.parent)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def run_case(case: Case, tmp: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp)
    case.build(tmp)
    before = {rel: fingerprint(tmp / rel) for rel in case.unchanged}
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    previous = signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(ROW_LIMIT_S)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    check(case, tmp, code, out, err)
    for rel, digest in before.items():
        assert fingerprint(tmp / rel) == digest, f"{rel} changed"
    return code, out, err


def check(case: Case, tmp: Path, code: int, out: str, err: str) -> None:
    both = out + err
    assert "Traceback" not in both, both[-2000:]
    assert code == case.code, f"exit {code}, expected {case.code}\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hipwizard: error: "), err
    message = (err if code == 2 else both).lower()
    for word in case.words:
        assert word.replace("{tmp}", str(tmp)).lower() in message, f"{word!r} not in: {message[-1500:]}"
    for word in case.not_words:
        assert word.lower() not in both.lower(), f"{word!r} in: {both[-1500:]}"
    if case.stdout_empty if case.stdout_empty is not None else code == 2:
        assert out == "", out
    for rel in case.absent:
        assert not (tmp / rel).exists(), f"{rel} appeared"
    for rel in case.appear:
        assert (tmp / rel).exists(), f"{rel} did not appear"


# --- builders shared by the rows -------------------------------------------------------------------------
def write(rel: str, data: str | bytes) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return build


def mkdir(rel: str) -> Callable[[Path], None]:
    return lambda tmp: (tmp / rel).mkdir(parents=True, exist_ok=True)


def both(*builds: Callable[[Path], None]) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        for b in builds:
            b(tmp)
    return build


BINARY = bytes(range(256)) * 8  # every byte value, NULs included: not text in any encoding
NOT_UTF8 = b"model_name_or_path: caf\xe9\n\xff\xfe\n"

