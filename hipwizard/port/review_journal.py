"""The review's decision journal: one JSON line per change, appended and fsync'd beside the state file.

Rewriting the whole state (megabytes for thousands of hunks) on every keystroke is what made a decision
slow; a journal line is a few hundred bytes. ``kill -9`` loses at most the line being written: a torn last
line is ignored when reading. The state file is brought up to date ("compacted") on open, on exit and
every ``COMPACT_EVERY`` changes; each line carries the revision it produces, so lines already in the state
file (a crash between compaction and removing the journal) are skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hipwizard.atomic import fsync_dir

COMPACT_EVERY = 256


def journal_path(state_path: Path) -> Path:
    """``<out>.review.journal`` for ``<out>.review.json`` (any other name: the name plus ``.journal``)."""
    name = state_path.name
    stem = name[: -len(".json")] if name.endswith(".json") else name
    return state_path.with_name(stem + ".journal")


def append(path: Path, entry: dict) -> None:
    """Append ``entry`` as one line and fsync it. Raises ``OSError`` (nothing is half-applied in memory:
    the caller restores its state)."""
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass")
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
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
    """The entries of a journal, in order; ``[]`` when there is none. Unparseable lines (a write torn by a
    crash) are skipped."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            entry = json.loads(line.decode("utf-8", "surrogatepass"))
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("rev"), int):
            entries.append(entry)
    return entries


def remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
