"""Run the risk rules over a translated file and attach the flags to hunks or to untouched lines.

Rules read the translated text (what will ship) and, for changed lines, the original text too (a rule
keyed on a CUDA name still fires on the hunk that renamed it). A finding on a line a hunk produced
flags that hunk; a finding anywhere else is a "flagged untouched line" (``FileTranslation.untouched_flags``)
- a ``#define WARP_SIZE 32`` that hipify never touches is still a risk.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from hipwizard.port.model import FileTranslation, Hunk, RiskFlag
from hipwizard.port.risk.base import RiskRule
from hipwizard.port.risk.line_search import CodeLines
from hipwizard.port.risk.rules import RULES
from hipwizard.port.translation.hunks import split_lines
from hipwizard.port.translation.lexer import mask_non_code

_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b")


@dataclass(frozen=True)
class Finding:
    rule: RiskRule
    line: int  # 1-based
    reason: str = ""  # this place's own reason (``RiskRule.explain``); the rule's when empty

    def flag(self) -> RiskFlag:
        r = self.rule
        return RiskFlag(r.rule_id, r.severity, self.reason or r.reason, r.hint, r.source, self.line)


def _explained(rule: RiskRule, line: int, code: str) -> Finding:
    return Finding(rule, line, rule.explain(code) if rule.explain is not None else "")


def code_lines(text: str, masked: str | None = None) -> CodeLines:
    """The text's lines with comments and strings blanked; ``#include`` lines kept whole (rules read them).
    ``masked``: ``mask_non_code(text)`` when already at hand."""
    return CodeLines(_masked_lines(text, masked))


def _masked_lines(text: str, masked_text: str | None = None) -> list[str]:
    masked = (mask_non_code(text) if masked_text is None else masked_text).split("\n")
    if "include" in text:
        original = text.split("\n")
        for i in _matching_include_lines(masked):
            if _INCLUDE_LINE.match(original[i]):
                masked[i] = original[i]
    return masked


def _matching_include_lines(masked: list[str]) -> list[int]:
    # the directive itself is code, so the masked line starts the same way as the original
    return [i for i, line in enumerate(masked) if "#" in line and _INCLUDE_LINE.match(line)]


def find_risks(text: str, rules: tuple[RiskRule, ...] = RULES, masked: str | None = None) -> list[Finding]:
    """Every rule's findings in ``text``, ordered by line then rule."""
    lines = code_lines(text, masked)
    out = [_explained(rule, i + 1, lines[i]) for rule in rules for i in rule.detect(lines)]
    return sorted(out, key=lambda f: (f.line, f.rule.rule_id))


def flag_translation(ft: FileTranslation, rules: tuple[RiskRule, ...] = RULES,
                     masks: tuple[str, str] | None = None) -> None:
    """Fill ``ft.hunks[*].flags`` and ``ft.untouched_flags`` (replacing what was there). ``masks``: the
    original's and the translation's ``mask_non_code``, when the translator already has them."""
    owner: dict[int, Hunk] = {}  # translated line -> hunk that produced it
    for hunk in ft.hunks:
        hunk.flags = []
        for k in range(len(hunk.new_lines)):
            owner[hunk.new_start + k] = hunk
    seen: set[tuple[str, str]] = set()
    untouched: list[RiskFlag] = []
    for f in find_risks(ft.translated, rules, masks[1] if masks else None):
        at = owner.get(f.line)
        if at is None:
            untouched.append(f.flag())
        elif (at.hunk_id, f.rule.rule_id) not in seen:
            seen.add((at.hunk_id, f.rule.rule_id))
            at.flags.append(f.flag())
    # CUDA names the hunk renamed away: look at the old side of each hunk as well (each rule runs once over
    # the whole original; its hits are handed to the hunks whose old lines hold them)
    changed = [h for h in ft.hunks if h.old_lines]
    if changed:
        # only the old lines of the hunks, one after the other (a big file's rules read a quarter of it)
        masked = _masked_lines(ft.original, masks[0] if masks else None)
        owners: list[Hunk] = []
        firsts: list[int] = []  # where each hunk's old lines start in old_lines
        picked: list[str] = []
        for h in changed:
            firsts.append(len(picked))
            owners.append(h)
            picked.extend(masked[h.old_start - 1:h.old_start - 1 + len(h.old_lines)])
        old_lines = CodeLines(picked)
        for rule in rules:
            for i in rule.detect(old_lines):
                k = bisect.bisect_right(firsts, i) - 1
                hunk = owners[k]
                if (hunk.hunk_id, rule.rule_id) in seen:
                    continue
                seen.add((hunk.hunk_id, rule.rule_id))
                line = hunk.new_start + min(i - firsts[k], max(len(hunk.new_lines) - 1, 0))
                hunk.flags.append(_explained(rule, line, old_lines[i]).flag())
    ft.untouched_flags = untouched


def attach_findings(ft: FileTranslation, findings: list[Finding]) -> int:
    """Add ``findings`` (lines of the translation) to ``ft``'s flags: on the hunk that produced the line, else
    as untouched flags; a rule already on that hunk or line is not added twice. Returns how many were added."""
    owner = {h.new_start + k: h for h in ft.hunks for k in range(len(h.new_lines))}
    untouched = {(f.rule_id, f.line) for f in ft.untouched_flags}
    added = 0
    for f in findings:
        hunk = owner.get(f.line)
        if hunk is None:
            if (f.rule.rule_id, f.line) not in untouched:
                untouched.add((f.rule.rule_id, f.line))
                ft.untouched_flags.append(f.flag())
                added += 1
        elif all(x.rule_id != f.rule.rule_id for x in hunk.flags):
            hunk.flags.append(f.flag())
            added += 1
    ft.untouched_flags.sort(key=lambda fl: (fl.line or 0, fl.rule_id))
    return added


def summarize_flags(files: list[FileTranslation]) -> dict[str, dict[str, int]]:
    """Counts for reports: {"hunks": {severity: n}, "untouched": {severity: n}, "rules": {rule_id: n}}."""
    out: dict[str, dict[str, int]] = {"hunks": {}, "untouched": {}, "rules": {}}
    for ft in files:
        for hunk in ft.hunks:
            for fl in hunk.flags:
                out["hunks"][fl.severity] = out["hunks"].get(fl.severity, 0) + 1
                out["rules"][fl.rule_id] = out["rules"].get(fl.rule_id, 0) + 1
        for fl in getattr(ft, "untouched_flags", []):
            out["untouched"][fl.severity] = out["untouched"].get(fl.severity, 0) + 1
            out["rules"][fl.rule_id] = out["rules"].get(fl.rule_id, 0) + 1
    return out


__all__ = ["Finding", "attach_findings", "code_lines", "find_risks", "flag_translation", "split_lines", "summarize_flags"]
