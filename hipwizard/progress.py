"""One shape of progress for every long action (translate, compile-check, probe, capture, compare, plan).

A service takes ``progress: ProgressFn | None`` and calls it with a ``Progress`` value; the CLI prints it on
stderr (``with terminal_progress() as progress: ...``), the TUI posts it to the screen as a message. Plain Python, no imports.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator


@dataclass(frozen=True)
class Progress:
    stage: str  # what is being done: "translating", "compiling", "probing", "capturing", ...
    done: int | None = None  # units finished so far (None: not countable)
    total: int | None = None  # units in all (None: unknown)
    item: str = ""  # the unit at hand: a file, a module, a tool

    @property
    def finished(self) -> bool:
        return self.total is not None and self.done == self.total

    def text(self) -> str:
        """"translating 3/10 kernels/softmax.cu"."""
        parts = [self.stage]
        if self.done is not None:
            parts.append(f"{self.done}/{self.total}" if self.total is not None else str(self.done))
        if self.item:
            parts.append(self.item)
        return " ".join(parts)


ProgressFn = Callable[[Progress], None]


def quiet(_progress: Progress) -> None:
    """A ``ProgressFn`` that reports nothing."""


def stderr_reporter(stream=None) -> ProgressFn | None:
    """A one-line, self-overwriting progress on a terminal's stderr; None when stderr is not a terminal
    (logs and pipes get no carriage-return noise)."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def report(p: Progress) -> None:
        print(f"\r\033[K{p.text()}", end="\n" if p.finished else "", file=stream, flush=True)

    return report


@contextmanager
def terminal_progress(stream=None) -> Iterator[ProgressFn | None]:
    """``stderr_reporter`` for the length of a command, its line cleared afterwards: a stage without a count
    never ends the line, and the result (or the error) must not start on it."""
    stream = stream or sys.stderr
    report = stderr_reporter(stream)
    try:
        yield report
    finally:
        if report is not None:
            print("\r\033[K", end="", file=stream, flush=True)
