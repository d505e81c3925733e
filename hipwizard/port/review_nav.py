"""Where the reviewer is: the hunks the filter shows, the current one, and moving between them.

Plain Python (no Textual) so the screen stays layout and wiring, and navigation is testable on its own.
"""

from __future__ import annotations

from hipwizard.port.model import Hunk
from hipwizard.port.review_state import ReviewState

FILTERS: list[tuple[str, str]] = [("all", "All hunks"), ("flagged", "⚑ Flagged only"), ("pending", "○ Pending only")]


class ReviewNav:
    """The filtered list of hunk indices (``view``) and the position in it."""

    def __init__(self, review: ReviewState) -> None:
        self.review = review
        self.filter = "all"
        self.pos = 0
        self.rebuild()

    # --- filter -------------------------------------------------------------------------------------
    def filter_options(self) -> list[tuple[str, str]]:
        return FILTERS + [(f"rule:{r}", f"Rule {r}") for r in self.review.rule_ids()]

    def filter_keys(self) -> list[str]:
        return [k for k, _ in self.filter_options()]

    @property
    def filter_label(self) -> str:
        return dict(self.filter_options()).get(self.filter, self.filter)

    def _shown(self, h: Hunk) -> bool:
        if self.filter == "all":
            return True
        if self.filter == "flagged":
            return bool(h.flags)
        if self.filter == "pending":
            return self.review.decision(h.hunk_id).state == "pending"
        rule = self.filter.removeprefix("rule:")
        return any(f.rule_id == rule for f in h.flags)

    def set_filter(self, key: str) -> None:
        self.filter = key if key in self.filter_keys() else "all"
        self.rebuild(keep=self.current.hunk_id if self.current else None)

    def rebuild(self, keep: str | None = None) -> None:
        """Recompute the view (after a filter change, a split or an undo), staying on ``keep`` or the
        first shown hunk after it."""
        hunks = self.review.hunks
        self.view = [i for i, h in enumerate(hunks) if self._shown(h)]
        self.pos_of = {i: p for p, i in enumerate(self.view)}
        self.files: list[str] = []
        self.file_first: dict[str, int] = {}
        for p, i in enumerate(self.view):
            f = hunks[i].file
            if f not in self.file_first:
                self.file_first[f] = p
                self.files.append(f)
        self.file_row = {f: r for r, f in enumerate(self.files)}
        target = self.review.index_of.get(keep) if keep else None
        if target is None:
            self.pos = min(self.pos, max(len(self.view) - 1, 0))
        else:
            self.pos = next((p for p, i in enumerate(self.view) if i >= target), max(len(self.view) - 1, 0))

    # --- where ----------------------------------------------------------------------------------------
    @property
    def current(self) -> Hunk | None:
        if not self.view:
            return None
        return self.review.hunks[self.view[self.pos]]

    def where(self) -> str:
        h = self.current
        if h is None:
            return ""
        in_file = self.review.by_file[h.file]
        n = in_file.index(self.view[self.pos]) + 1
        return f"hunk {n}/{len(in_file)} of file · {self.pos + 1}/{len(self.view)} shown"

    def file_prompt(self, rel: str) -> str:
        """Two lines for the file list: state symbol and path, then counts with symbols."""
        c = self.review.counts(self.review.by_file.get(rel, []))
        flagged = sum(1 for i in self.review.by_file.get(rel, []) if self.review.hunks[i].flags)
        symbol = "✔" if c["pending"] == 0 else ("◐" if c["pending"] < c["total"] else "○")
        counts = f"  ○{c['pending']} ✔{c['accepted'] + c['edited']} ✖{c['rejected']}"
        if flagged:
            counts += f" ⚑{flagged}"
        if c["high_pending"]:
            counts += f" !{c['high_pending']} high"
        return f"{symbol} {rel}\n{counts}"

    def file_ids(self, rel: str) -> list[str]:
        return [self.review.hunks[i].hunk_id for i in self.review.by_file.get(rel, [])]

    # --- moving ---------------------------------------------------------------------------------------
    def step(self, delta: int) -> bool:
        p = self.pos + delta
        if not self.view or not 0 <= p < len(self.view):
            return False
        self.pos = p
        return True

    def step_pending(self, delta: int) -> bool:
        p = self.pos + delta
        while 0 <= p < len(self.view):
            if self.review.decision(self.review.hunks[self.view[p]].hunk_id).state == "pending":
                self.pos = p
                return True
            p += delta
        return False

    def go_to_hunk(self, index: int) -> bool:
        p = self.pos_of.get(index)
        if p is None:
            p = next((q for q, i in enumerate(self.view) if i >= index), None)
        if p is None:
            return False
        self.pos = p
        return True

    def go_to_id(self, hunk_id: str) -> bool:
        p = self.pos_of.get(self.review.index_of.get(hunk_id, -1))
        if p is None:
            return False
        self.pos = p
        return True

    def go_to_file(self, rel: str) -> bool:
        p = self.file_first.get(rel)
        if p is None:
            return False
        self.pos = p
        return True

    def search(self, query: str) -> str | None:
        """The id of the next hunk after the current one (wrapping) whose file, text or rule ids contain
        ``query`` (case-insensitive); all hunks are searched, not only the shown ones."""
        q = query.strip().lower()
        hunks = self.review.hunks
        if not q or not hunks:
            return None
        start = self.view[self.pos] if self.view else -1
        for k in range(1, len(hunks) + 1):
            h = hunks[(start + k) % len(hunks)]
            hay = [h.file, *h.old_lines, *h.new_lines, *(f.rule_id for f in h.flags)]
            if any(q in s.lower() for s in hay):
                return h.hunk_id
        return None
