"""What a build-file translation gives back: the translated text and its flags.

A ``BuildFlag`` is one line that needs a human (``kind`` names the rule, ``reason`` says why, ``fix`` what to do);
``to_risk`` turns it into the review's ``RiskFlag`` (rule id ``BUILD_<KIND>``) so it shows in the review like
any other risk. ``BuildTarget`` is what the caller knows about the machine: the gfx arch to build for (the
doctor's, else gfx942) and the ROCm root the user can override (``ROCM_PATH``, default ``/opt/rocm``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["high", "med", "low"]
BuildKind = Literal["make", "cmake", "setup", "pyproject", "shell"]

DEFAULT_ARCH = "gfx942"


@dataclass(frozen=True)
class BuildTarget:
    """The GPU arch the translated build compiles for, and the ROCm root variable (and its default)."""

    arch: str = DEFAULT_ARCH
    rocm_var: str = "ROCM_PATH"
    rocm_default: str = "/opt/rocm"


@dataclass(frozen=True)
class BuildFlag:
    """A line of a translated build file that needs a human: 1-based ``line`` in the translated text."""

    line: int
    kind: str  # a short rule name, lower-case with dashes: "arch-detect", "not-drop-in", ...
    severity: Severity
    reason: str
    fix: str
    source: str = ""

    @property
    def rule_id(self) -> str:
        return "BUILD_" + self.kind.upper().replace("-", "_")

    def to_risk(self):
        """The review's ``RiskFlag`` for this flag (imported here so the translators stay free of the review)."""
        from hipwizard.port.model import RiskFlag

        return RiskFlag(self.rule_id, self.severity, self.reason, self.fix, self.source, self.line)


@dataclass(frozen=True)
class BuildTranslation:
    """A build file's translated ``text`` and its ``flags`` (sorted by line). ``kind``: which translator."""

    kind: BuildKind
    text: str
    flags: tuple[BuildFlag, ...] = field(default_factory=tuple)


class Lines:
    """A file being translated line by line: each input line keeps its place, may change, and may gain lines
    inserted before or after it (so flags and hunks stay where the user expects them). Flags name input lines;
    ``result`` turns them into lines of the output."""

    def __init__(self, text: str):
        self.text = text.split("\n")
        self.before: list[list[str]] = [[] for _ in self.text]
        self.after: list[list[str]] = [[] for _ in self.text]
        self._flags: list[tuple[int, str, Severity, str, str, str]] = []

    def __len__(self) -> int:
        return len(self.text)

    def insert(self, i: int, line: str, *, after: bool = False) -> None:
        """Add ``line`` before (or ``after``) input line ``i``, with that line's ending (CRLF kept)."""
        cr = "\r" if self.text[i].endswith("\r") else ""
        (self.after if after else self.before)[i].append(line + cr)

    def flag(self, i: int, kind: str, severity: Severity, reason: str, fix: str, source: str = "") -> None:
        self._flags.append((i, kind, severity, reason, fix, source))

    def has_flag(self, kind: str) -> bool:
        return any(f[1] == kind for f in self._flags)

    def result(self, kind: BuildKind) -> BuildTranslation:
        out: list[str] = []
        where: list[int] = []  # input line -> 1-based output line
        for i, line in enumerate(self.text):
            out.extend(self.before[i])
            where.append(len(out) + 1)
            out.append(line)
            out.extend(self.after[i])
        seen: set[tuple[int, str]] = set()
        flags = []
        for i, k, severity, reason, fix, source in self._flags:
            if (where[i], k) not in seen:
                seen.add((where[i], k))
                flags.append(BuildFlag(where[i], k, severity, reason, fix, source))
        return BuildTranslation(kind, "\n".join(out), tuple(sorted(flags, key=lambda f: (f.line, f.kind))))
