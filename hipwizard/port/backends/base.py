"""What every backend provides: translate a batch of source files into (text, diagnostics, stats)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from hipwizard.port.model import Diagnostic
from hipwizard.port.scan import SourceFile

Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class BackendResult:
    """One file's translation; ``error`` set (and ``text`` = the original) when the tool failed on it."""

    source: SourceFile
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    error: str = ""


class Backend(Protocol):
    name: str

    def available(self) -> bool: ...

    def translate(self, files: list[SourceFile], progress: Progress | None = None) -> list[BackendResult]: ...
