"""What a risk rule is: an id, a severity, why, what to do, where that is documented, and a detector over masked
code lines (``(lines) -> [0-based line indices]``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hipwizard.port.model import Severity
from hipwizard.port.risk.line_search import matching_lines

Detector = Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class RiskRule:
    rule_id: str
    severity: Severity
    reason: str
    hint: str
    source: str
    detect: Detector
    # this place's own reason from its code line (a version the tables give for the name on it); "" = ``reason``
    explain: Callable[[str], str] | None = None


def _rx(*patterns: str, flags: int = 0) -> Detector:
    # "(?i)" at the start of one pattern applies to that pattern only
    parts = [f"(?i:{p[4:]})" if p.startswith("(?i)") else f"(?:{p})" for p in patterns]
    rx = re.compile("|".join(parts), flags)

    def detect(lines: list[str]) -> list[int]:
        return matching_lines(rx, lines)

    detect.pattern = rx  # type: ignore[attr-defined]  # for tests and debugging
    return detect
