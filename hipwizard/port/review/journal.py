"""The review's decision journal: one JSON line per change, appended and fsync'd beside the state file.

Rewriting the whole state (megabytes for thousands of hunks) on every keystroke is what made a decision
slow; a journal line is a few hundred bytes. ``kill -9`` loses at most the line being written: a torn
line is skipped when reading, and every skipped line is reported (``unreadable``: its line numbers) so the
review can say so once; when such a journal is folded in, it is kept aside (``keep_aside``), not deleted. The state file is brought up to date ("compacted") on open, on exit and
every ``COMPACT_EVERY`` changes; each line carries the revision it produces, so lines already in the state
file (a crash between compaction and removing the journal) are skipped.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from hipwizard.atomic import fsync_dir
from hipwizard.errors import UserError

COMPACT_EVERY = 256


def journal_path(state_path: Path) -> Path:
    """``<out>.review.journal`` for ``<out>.review.json`` (any other name: the name plus ``.journal``)."""
    name = state_path.name
    stem = name.removesuffix(".json")
    return state_path.with_name(stem + ".journal")


def append(path: Path, entry: dict) -> None:
    """Append ``entry`` as one line and fsync it. Raises ``OSError``, or ``UserError`` when the journal is a
    symbolic link (never written through: it could point at any file of the user's); nothing is half-applied
    in memory: the caller restores its state."""
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass")
    created = not os.path.lexists(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"refusing to append to the decision journal {path}: it is a symbolic link "
                            "(remove it; decisions are kept in the state file beside it)") from None
        raise
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a line torn by a crash would swallow this one: start a fresh line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:  # the new name itself must survive a crash
        fsync_dir(path.parent)


def read(path: Path) -> list[dict]:
    """The entries of a journal, in order; ``[]`` when there is none. Unreadable lines are skipped."""
    return read_all(path)[0]


def read_all(path: Path) -> tuple[list[dict], list[int]]:
    """The entries of a journal in order, and the (1-based) numbers of the lines that could not be read:
    not JSON (a write torn by a crash, a damaged disk) or not a change with a revision."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], []
    entries, unreadable = [], []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line.decode("utf-8", "surrogatepass"))
        except ValueError:
            entry = None
        if isinstance(entry, dict) and isinstance(entry.get("rev"), int) and not isinstance(entry["rev"], bool):
            entries.append(entry)
        else:
            unreadable.append(number)
    return entries, unreadable


def keep_aside(path: Path, revision: int) -> Path | None:
    """Rename a journal with unreadable lines to ``<journal>.unreadable-r<revision>`` (its readable changes
    are in the state file by now; its raw bytes stay for a person to look at). Returns the new path."""
    target = path.with_name(f"{path.name}.unreadable-r{revision}")
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    fsync_dir(path.parent)
    return target


def describe(unreadable: list[int], journal: Path) -> str:
    """One line for the user: how many journal lines could not be read, and which."""
    shown = ", ".join(map(str, unreadable[:10])) + (", ..." if len(unreadable) > 10 else "")
    n = len(unreadable)
    return (f"{n} line{'s' if n != 1 else ''} of the decision journal {journal.name} could not be read "
            f"(line{'s' if n != 1 else ''} {shown}) and {'were' if n != 1 else 'was'} skipped; "
            "a change being saved when hipwizard was stopped may be missing")


def remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
