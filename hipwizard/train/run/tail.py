"""Incremental tails: read only the bytes a file gained since the last look.

``FileTail`` keeps an offset and the unfinished last line; it notices a file that does not exist yet,
and truncation or replacement (a run restarted with ``overwrite_output_dir``), which it reports as
``reset`` so the consumer drops what it had. ``TrainerLogTail`` turns ``trainer_log.jsonl`` into
records, counting lines that are not JSON instead of failing on them.

Attaching to a huge log (a long run, a million lines) must stay fast: above ``FULL_READ_BYTES`` the
part before the last ``RECENT_BYTES`` is represented by an even sample of ``OVERVIEW_POINTS`` lines
(enough for a plot as wide as a terminal), and the recent part is read in full.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FULL_READ_BYTES = 16 * 1024 * 1024
RECENT_BYTES = 4 * 1024 * 1024
OVERVIEW_POINTS = 2000
POLL_MAX_BYTES = 8 * 1024 * 1024  # bound one update's work; the rest comes next poll


def open_regular(path: str | Path):
    """``path`` opened for binary reading when it is a regular file; ``OSError`` otherwise. A log named
    by a run.json may be a FIFO (``open`` would wait for a writer forever) or a device (``/dev/zero``
    never ends): neither is a log. Opened without blocking, then checked on the open file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass
class TailChunk:
    """New complete lines since the last poll; ``reset`` means the file started over."""

    lines: list[str] = field(default_factory=list)
    reset: bool = False
    missing: bool = False
    more: bool = False  # more bytes are waiting than one poll reads


class FileTail:
    """Follows one text file by byte offset (the file may not exist yet)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offset = 0
        self._partial = b""
        self._ident: tuple[int, int] | None = None

    def skip_to(self, offset: int) -> None:
        """Continue from ``offset`` (the start of a line) on the next poll."""
        self.offset, self._partial = offset, b""

    def poll(self, max_bytes: int = POLL_MAX_BYTES) -> TailChunk:
        try:
            fh = open_regular(self.path)
        except FileNotFoundError:
            reset = self._ident is not None
            self._ident, self.offset, self._partial = None, 0, b""
            return TailChunk(reset=reset, missing=True)
        except OSError:
            return TailChunk(missing=True)
        with fh:
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino)
            reset = False
            if self._ident is not None and (ident != self._ident or st.st_size < self.offset):
                reset = True
                self.offset, self._partial = 0, b""
            self._ident = ident
            if st.st_size == self.offset:
                return TailChunk(reset=reset)
            fh.seek(self.offset)
            data = fh.read(max_bytes)
        self.offset += len(data)
        data = self._partial + data
        cut = data.rfind(b"\n")
        if cut < 0:
            self._partial = data
            return TailChunk(reset=reset, more=self.offset < st.st_size)
        self._partial = data[cut + 1:]
        lines = data[:cut].decode("utf-8", errors="replace").split("\n")
        return TailChunk(lines=lines, reset=reset, more=self.offset < st.st_size)


@dataclass
class TrainerBatch:
    records: list[dict[str, Any]]
    invalid: int = 0
    reset: bool = False
    missing: bool = False
    sampled: bool = False  # older history is an even sample (huge log on attach)


def _parse(lines: list[str]) -> tuple[list[dict[str, Any]], int]:
    records, invalid = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            invalid += 1
            continue
        if isinstance(rec, dict):
            records.append(rec)
        else:
            invalid += 1
    return records, invalid


class TrainerLogTail:
    """``trainer_log.jsonl`` -> records, incrementally."""

    def __init__(self, path: str | Path):
        self.tail = FileTail(path)
        self.attached = False

    @property
    def path(self) -> Path:
        return self.tail.path

    def attach(self) -> TrainerBatch:
        """The history so far; later ``poll`` calls return only what is new."""
        self.attached = True
        try:
            size = self.path.stat().st_size
        except OSError:
            return self._batch(self.tail.poll())
        if size <= FULL_READ_BYTES:
            return self._drain()
        overview = sample_lines(self.path, size - RECENT_BYTES, OVERVIEW_POINTS)
        records, invalid = _parse(overview)
        start = _line_start_after(self.path, size - RECENT_BYTES)
        self.tail.poll(max_bytes=0)  # learn the file identity without reading
        self.tail.skip_to(start)
        recent = self._drain()
        return TrainerBatch(records + recent.records, invalid + recent.invalid, sampled=True)

    def _drain(self) -> TrainerBatch:
        out = TrainerBatch([])
        while True:
            chunk = self.tail.poll()
            b = self._batch(chunk)
            out.records += b.records
            out.invalid += b.invalid
            out.reset |= b.reset
            out.missing = b.missing
            if not chunk.more:
                return out

    def poll(self) -> TrainerBatch:
        if not self.attached:
            return self.attach()
        return self._batch(self.tail.poll())

    def _batch(self, chunk: TailChunk) -> TrainerBatch:
        records, invalid = _parse(chunk.lines)
        return TrainerBatch(records, invalid, chunk.reset, chunk.missing)


def _line_start_after(path: Path, offset: int) -> int:
    """The offset of the first line that starts at or after ``offset``."""
    if offset <= 0:
        return 0
    with open_regular(path) as fh:
        fh.seek(offset - 1)
        if fh.read(1) == b"\n":
            return offset
        fh.readline()
        return fh.tell()


def sample_lines(path: Path, end: int, count: int) -> list[str]:
    """About ``count`` whole lines evenly spread over the first ``end`` bytes (one seek each)."""
    out = []
    with open_regular(path) as fh:
        step = max(1, end // count)
        for pos in range(0, max(end, 0), step):
            fh.seek(pos)
            if pos:
                fh.readline()  # finish the line we landed in
            if fh.tell() >= end:
                break
            line = fh.readline()
            if line.endswith(b"\n"):
                out.append(line.decode("utf-8", errors="replace"))
    return out


def last_record(path: str | Path, window: int = 64 * 1024, key: str | None = None) -> dict[str, Any] | None:
    """The last complete JSON record of a jsonl file (with ``key``, if given), reading only its end."""
    try:
        with open_regular(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - window))
            data = fh.read(window)
    except OSError:
        return None
    for line in reversed(data.split(b"\n")):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and (key is None or key in rec):
            return rec
    return None


def read_end(path: str | Path, nbytes: int = 256 * 1024) -> str:
    """The last ``nbytes`` of a text file (from a line start), or "" when it cannot be read."""
    try:
        with open_regular(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - nbytes))
            data = fh.read(nbytes)
    except OSError:
        return ""
    if size > nbytes:
        data = data.split(b"\n", 1)[-1]
    return data.decode("utf-8", errors="replace")
