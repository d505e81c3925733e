"""What every backend provides: translate a batch of source files into (text, diagnostics, stats)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hipwizard.port.model import Diagnostic
from hipwizard.port.translation.edits import Span
from hipwizard.port.translation.scan import SourceFile
from hipwizard.progress import Progress, ProgressFn

STAGE = "translating"  # the stage name backends report progress under
BIG_FILE = 2**20  # a file this large is also reported before its translation starts (it takes a moment)


@dataclass
class BackendResult:
    """One file's translation; ``error`` set (and ``text`` = the original) when the tool failed on it."""

    source: SourceFile
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    error: str = ""
    spans: list[Span] | None = None  # what changed, when the backend knows (the built-in's edit log): no diff needed
    masked_original: str | None = None  # the source's mask_non_code, when the backend computed it


class Backend(Protocol):
    name: str

    def available(self) -> bool: ...

    def translate(self, files: list[SourceFile], progress: ProgressFn | None = None) -> list[BackendResult]: ...


def report(progress: ProgressFn | None, done: int, total: int, item: str = "") -> None:
    """Tell ``progress`` (if any) that ``done`` of ``total`` files are translated."""
    if progress is not None:
        progress(Progress(STAGE, done, total, item))
