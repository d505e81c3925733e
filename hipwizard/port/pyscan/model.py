"""What a Python rule is and what it finds: a rule (id, severity, why, what to do, a URL that says so), a
finding on a 1-based line, and, where the fix is mechanical, the replacement text for a span of the source.

Findings duck-type ``hipwizard.port.risk.flags.Finding`` (``rule.rule_id``, ``line``, ``flag()``), so
``risks.attach_findings`` hangs them on hunks or untouched lines like any C/C++ risk, and every face shows
them as the same ``RiskFlag``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipwizard.port.model import RiskFlag, Severity


@dataclass(frozen=True)
class PyRule:
    rule_id: str
    severity: Severity
    reason: str
    hint: str
    source: str  # URL(s) that document the behaviour


@dataclass(frozen=True)
class Replacement:
    """Put ``text`` in place of the source's characters ``[start, end)`` (offsets into the whole text)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class PyFinding:
    rule: PyRule
    line: int  # 1-based, in the original text
    fix: tuple[Replacement, ...] = ()  # empty: a human decides

    def flag(self) -> RiskFlag:
        r = self.rule
        return RiskFlag(r.rule_id, r.severity, r.reason, r.hint, r.source, self.line)
