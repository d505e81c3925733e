"""Read-only views over a review: decisions, the lines a hunk writes, counts, rules, API diagnostics.

``ReviewQueries`` is a mixin of ``ReviewModel`` (which holds ``hunks``, ``decisions``, ``by_file``,
``untouched``, ``diagnostics``, ``revision`` and the ``memo`` of derived numbers); nothing here changes
the review.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hipwizard.port.measured import precision
from hipwizard.port.model import SEVERITY_ORDER, Diagnostic, Hunk, RiskFlag, UntouchedRisk, hand_edit_lines
from hipwizard.port.review.file_format import Decision
from hipwizard.port.review.memo import ReviewMemo
from hipwizard.port.translation.hunks import flagged_counts

API_KINDS = ("unsupported", "too_new", "removed")  # diagnostics kept with the review: APIs that need a look


@dataclass(frozen=True)
class ReviewCounts:
    """How many hunks (of the review, or of some of them) are in each state; ``high_pending``: pending ones
    with a high-severity flag; ``changed``: came back pending because the sources changed."""

    pending: int = 0
    accepted: int = 0
    rejected: int = 0
    edited: int = 0
    high_pending: int = 0
    changed: int = 0
    total: int = 0

    @property
    def decided(self) -> int:
        return self.accepted + self.rejected + self.edited

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class ReviewQueries:
    # What ``ReviewModel`` holds, declared for the queries (it sets each one).
    src: Path
    out: Path
    files: dict[str, dict]  # path -> {"sha256": of the original, "hunks": N}
    hunks: list[Hunk]
    index_of: dict[str, int]
    by_file: dict[str, list[int]]
    decisions: dict[str, Decision]
    untouched: dict[str, tuple[UntouchedRisk, ...]]
    diagnostics: dict[str, tuple[Diagnostic, ...]]
    revision: int
    last_write: Any  # a model.WriteRecord or None (not imported: model imports this module)
    hip_version: str
    memo: ReviewMemo
    _shifts_memo: tuple[tuple[int, list[Hunk], dict[str, Decision]], dict[str, Any]]
    _flagged: dict[str, int]
    _flagged_at: list[Hunk] | None = None

    # --- decisions ---------------------------------------------------------------------------
    def decision(self, hunk_id: str) -> Decision:
        return self.decisions.get(hunk_id) or Decision()

    def hunk(self, hunk_id: str) -> Hunk:
        return self.hunks[self.index_of[hunk_id]]

    def chosen_lines(self, hunk: Hunk) -> list[str]:
        """The lines this hunk contributes to the output: translation, edit, or original."""
        d = self.decision(hunk.hunk_id)
        if d.state == "accepted":
            return hunk.new_lines
        if d.state == "edited" and d.lines is not None:
            return d.lines
        return hunk.old_lines

    def written_line(self, rel: str, risk: UntouchedRisk) -> int | None:
        """Where an unchanged line with a risk lands in the file written from the current decisions."""
        if risk.old_line is None:
            return None
        ends, shifts = self._written_shifts(rel)
        return risk.old_line + shifts[bisect.bisect_right(ends, risk.old_line)]

    def _written_shifts(self, rel: str) -> tuple[list[int], list[int]]:
        """The hunks of ``rel`` by their last original line, and the prefix sums of the lines each adds
        (chosen minus original): a bisection per risk instead of a pass over every hunk per risk (a big
        file's ``review --write`` listed its 10^4 risks in minutes). Remembered while the revision, the hunk
        list and the decisions are the same (every change bumps the revision, see ``review_memo``)."""
        at = (self.revision, self.hunks, self.decisions)
        memo = getattr(self, "_shifts_memo", None)  # not set until the first call
        if memo is None or memo[0][0] != at[0] or memo[0][1] is not at[1] or memo[0][2] is not at[2]:
            memo = self._shifts_memo = (at, {})
        found = memo[1].get(rel)
        if found is None:
            pairs = sorted((h.old_start + len(h.old_lines), len(self.chosen_lines(h)) - len(h.old_lines))
                           for h in (self.hunks[i] for i in self.by_file.get(rel, ())))
            shifts = [0]
            for _, added in pairs:
                shifts.append(shifts[-1] + added)
            found = memo[1][rel] = ([end for end, _ in pairs], shifts)
        return found

    def counts(self, hunk_indices: Iterable[int] | None = None) -> ReviewCounts:
        """pending / accepted / rejected / edited / high_pending / changed, over all hunks or some."""
        if hunk_indices is None:
            # The screen asks after every keystroke: remembered per revision (every change bumps it).
            cached = self.memo.get_counts(self)
            if cached is None:
                cached = self._count(range(len(self.hunks)))
                self.memo.set_counts(self, cached)
            return ReviewCounts(**cached)
        return ReviewCounts(**self._count(hunk_indices))

    def _count(self, indices: Iterable[int]) -> dict[str, int]:
        c = dict.fromkeys(("pending", "accepted", "rejected", "edited", "high_pending", "changed", "total"), 0)
        for i in indices:
            h = self.hunks[i]
            d = self.decision(h.hunk_id)
            c[d.state] += 1
            c["total"] += 1
            c["changed"] += d.changed
            if d.state == "pending" and h.max_severity == "high":
                c["high_pending"] += 1
        return c

    def first_pending(self) -> int | None:
        for i, h in enumerate(self.hunks):
            if self.decision(h.hunk_id).state == "pending":
                return i
        return None

    # --- queries for the screen and the CLI ---------------------------------------------------------------
    def rule_ids(self) -> list[str]:
        """Rule ids present in the hunks and on untouched lines (cached per hunk list and untouched map:
        the screen asks on every redraw)."""
        cached = self.memo.get_rules(self)
        if cached is None:
            rules = {f.rule_id for h in self.hunks for f in h.flags}
            rules |= {r.flag.rule_id for risks in self.untouched.values() for r in risks}
            cached = sorted(rules)
            self.memo.set_rules(self, cached)
        return cached

    def telling(self, hunk: Hunk) -> float:
        """How often the hunk's most telling flag kind marks real AMD porting work: the kind's measured share of
        flags near code that dual-target projects guard for AMD (``assets/risk_precision.yaml``); -1 unflagged."""
        return max((precision(f.rule_id) for f in hunk.flags), default=-1.0)

    def telling_flag(self, hunk: Hunk) -> tuple[RiskFlag, float] | None:
        """The hunk's most telling flag and its kind's measured share (``telling``); None unflagged."""
        if not hunk.flags:
            return None
        top = max(hunk.flags, key=lambda f: precision(f.rule_id))
        return top, precision(top.rule_id)

    def flagged_order(self) -> list[int]:
        """The flagged hunks' indices, the most telling first (``telling``); file order among equals."""
        flagged = [i for i, h in enumerate(self.hunks) if h.flags]
        return sorted(flagged, key=lambda i: -self.telling(self.hunks[i]))

    def untouched_counts(self) -> dict[str, int]:
        """Risks on unchanged lines by severity, plus ``total``."""
        c = dict.fromkeys(SEVERITY_ORDER, 0)
        for risks in self.untouched.values():
            for r in risks:
                c[r.flag.severity] += 1
        return {**c, "total": sum(c.values())}

    def hand_edit_lines(self) -> dict[str, int]:
        """``model.hand_edit_lines`` of this review: {"total", "risks", "api"} lines that need a hand edit."""
        return hand_edit_lines(self.untouched, self.diagnostics)

    def api_counts(self, kind: str) -> dict[str, int]:
        """{CUDA name: occurrences} of the API diagnostics of ``kind`` ("too_new", "unsupported", "removed")."""
        counts: dict[str, int] = {}
        for diags in self.diagnostics.values():
            for d in diags:
                if d.kind == kind:
                    counts[d.name] = counts.get(d.name, 0) + 1
        return dict(sorted(counts.items()))

    def flagged_counts(self) -> dict[str, int]:
        """``hunks.flagged_counts`` of this review (remembered while the hunk list is the same)."""
        if self._flagged_at is not self.hunks:
            self._flagged, self._flagged_at = flagged_counts(self.hunks), self.hunks
        return dict(self._flagged)

    def summary(self) -> dict:
        c = self.counts()
        flagged = self.flagged_counts()
        sev = {k: flagged[k] for k in SEVERITY_ORDER}
        return {"files": len(self.files), "hunks": c.total, "decided": c.decided, **c.to_dict(),
                "flagged": sev, "flagged_hunks": flagged["total"], "untouched": self.untouched_counts(),
                "revision": self.revision,
                "last_write": self.last_write.to_dict() if self.last_write is not None else None, "hip_version": self.hip_version,
                "too_new": self.api_counts("too_new"), "unsupported": self.api_counts("unsupported"),
                "hand_edit_lines": self.hand_edit_lines(),
                "src": str(self.src), "out": str(self.out)}

