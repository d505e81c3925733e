"""Where the reviewer is: the hunks the filter shows, the current one, and moving between them.

Plain Python (no Textual) so the screen stays layout and wiring, and navigation is testable on its own.
A file whose only risks are on lines the translation left unchanged (no hunk, or none the filter shows)
is a stop of its own in the view, so it is listed and its risks can be read; there is nothing to decide
on it (``current`` is None there, ``current_file`` names it).
"""

from __future__ import annotations

from hipwizard.port.measured import precision
from hipwizard.port.model import Hunk, UntouchedRisk
from hipwizard.port.review.state import ReviewState

# "flagged" lists the files and their hunks most telling first: by how often the hunk's flag kinds mark real AMD
# porting work (measured on dual-target projects, ``ReviewQueries.telling``), so the reader starts where the work is
FILTERS: list[tuple[str, str]] = [("all", "All hunks"), ("flagged", "⚑ Flagged, most telling first"),
                                  ("pending", "○ Pending only")]


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

    def shown_risks(self, rel: str) -> tuple[UntouchedRisk, ...]:
        """The file's risks on unchanged lines that the filter lets through (none for "pending only":
        there is nothing to decide about them)."""
        risks = self.review.untouched.get(rel, ())
        if not risks or self.filter in ("all", "flagged"):
            return risks
        if self.filter == "pending":
            return ()
        rule = self.filter.removeprefix("rule:")
        return tuple(r for r in risks if r.flag.rule_id == rule)

    def set_filter(self, key: str) -> None:
        """Show what ``key`` lets through, staying on the current hunk (or file); "flagged" starts at its top, the
        most telling hunk, where the porting work is."""
        self.filter = key if key in self.filter_keys() else "all"
        current = self.current
        self.rebuild(keep=current.hunk_id if current else None, keep_file=None if current else self.current_file)
        if self.filter == "flagged":
            self.pos = 0

    def rebuild(self, keep: str | None = None, keep_file: str | None = None) -> None:
        """Recompute the view (after a filter change, a split or an undo), staying on ``keep`` (a hunk id)
        or the first shown hunk after it, else on file ``keep_file``.

        ``view`` holds hunk indices in file order (under "flagged": files and their hunks most telling first); a file shown without hunks (only risks on unchanged
        lines) is the entry ``-1 - k``, ``k`` its index in ``risk_files``."""
        review, hunks = self.review, self.review.hunks
        self.view: list[int] = []
        self.risk_files: list[str] = []
        self.files: list[str] = []
        self.file_first: dict[str, int] = {}
        order = list(review.files) + [f for f in review.by_file if f not in review.files]
        telling = self.filter == "flagged"  # most telling first: files by their best hunk, hunks within a file
        if telling:
            best = {f: max([review.telling(hunks[i]) for i in review.by_file.get(f, ())]
                           + [precision(r.flag.rule_id) for r in self.shown_risks(f)], default=-1.0) for f in order}
            order.sort(key=lambda f: -best[f])
        for f in order:
            first = len(self.view)
            shown = [i for i in review.by_file.get(f, ()) if self._shown(hunks[i])]
            self.view.extend(sorted(shown, key=lambda i: -review.telling(hunks[i])) if telling else shown)
            if len(self.view) == first and self.shown_risks(f):
                self.view.append(-1 - len(self.risk_files))
                self.risk_files.append(f)
            if len(self.view) > first:
                self.file_first[f] = first
                self.files.append(f)
        self.pos_of = {i: p for p, i in enumerate(self.view) if i >= 0}
        self.file_row = {f: r for r, f in enumerate(self.files)}
        target = review.index_of.get(keep) if keep else None
        if target is not None and target in self.pos_of:
            self.pos = self.pos_of[target]
        elif target is not None:
            self.pos = next((p for p, i in enumerate(self.view) if i >= target), max(len(self.view) - 1, 0))
        elif keep_file in self.file_first:
            self.pos = self.file_first[keep_file]
        else:
            self.pos = min(self.pos, max(len(self.view) - 1, 0))

    # --- where ----------------------------------------------------------------------------------------
    @property
    def current(self) -> Hunk | None:
        """The hunk at the position; None with an empty view or on a file shown without hunks."""
        if not self.view or self.view[self.pos] < 0:
            return None
        return self.review.hunks[self.view[self.pos]]

    @property
    def current_file(self) -> str | None:
        """The file at the position (of the hunk, or the file shown without hunks)."""
        if not self.view:
            return None
        i = self.view[self.pos]
        return self.review.hunks[i].file if i >= 0 else self.risk_files[-1 - i]

    def where(self) -> str:
        h = self.current
        if h is None:
            if self.current_file is None:
                return ""
            what = "no hunks in this file" if not self.review.by_file.get(self.current_file) else "no hunk shown"
            return f"{what} · {self.pos + 1}/{len(self.view)} shown"
        in_file = self.review.by_file[h.file]
        n = in_file.index(self.view[self.pos]) + 1
        order = " · most telling first" if self.filter == "flagged" else ""
        return f"hunk {n}/{len(in_file)} of file · {self.pos + 1}/{len(self.view)} shown{order}"

    def file_prompt(self, rel: str) -> str:
        """Two lines for the file list: state symbol and path, then counts with symbols."""
        indices = self.review.by_file.get(rel, [])
        unchanged = len(self.review.untouched.get(rel, ()))
        if not indices:  # nothing to decide: only risks on lines the translation left as they were
            return f"⚑ {rel}\n  {unchanged} manual edit{'s' if unchanged != 1 else ''}"
        c = self.review.counts(indices)
        flagged = sum(1 for i in indices if self.review.hunks[i].flags)
        symbol = "✔" if c.pending == 0 else ("◐" if c.pending < c.total else "○")
        counts = f"  ○{c.pending} ✔{c.accepted + c.edited} ✖{c.rejected}"
        if flagged:  # flagged hunks only (``hunks.flagged_counts``); risks on unchanged lines are manual edits
            counts += f" ⚑{flagged}"
        if unchanged:
            counts += f" · {unchanged} manual"
        if c.high_pending:
            counts += f" !{c.high_pending} high"
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
            i = self.view[p]
            if i >= 0 and self.review.decision(self.review.hunks[i].hunk_id).state == "pending":
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
        start = max(self.view[self.pos], -1) if self.view else -1
        for k in range(1, len(hunks) + 1):
            h = hunks[(start + k) % len(hunks)]
            hay = [h.file, *h.old_lines, *h.new_lines, *(f.rule_id for f in h.flags)]
            if any(q in s.lower() for s in hay):
                return h.hunk_id
        return None
