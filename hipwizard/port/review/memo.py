"""Derived numbers of a review, remembered per revision: the screen asks after every keystroke.

Every change bumps the review's revision and replaces (never mutates) its hunk list when hunks change, so
a value computed at revision R over hunk list H is valid while both are the same. A decision made at
revision R-1 updates the counts in O(hunks decided) instead of recounting every hunk (``after_decide``).
Nothing here reads or writes files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hipwizard.port.review.file_format import Decision

COUNT_KEYS = ("pending", "accepted", "rejected", "edited", "high_pending", "changed", "total")


@dataclass
class ReviewMemo:
    counts_at: tuple[int, object] = (-1, None)  # (revision, hunk list) the counts belong to
    counts: dict[str, int] = field(default_factory=dict)
    rules_at: tuple[object, object] = (None, None)  # (hunk list, untouched map) the rule ids belong to
    rules: list[str] = field(default_factory=list)

    def get_counts(self, model) -> dict[str, int] | None:
        if self.counts_at[0] == model.revision and self.counts_at[1] is model.hunks:
            return dict(self.counts)
        return None

    def set_counts(self, model, counts: dict[str, int]) -> None:
        self.counts_at, self.counts = (model.revision, model.hunks), dict(counts)

    def after_decide(self, model, entry: list[dict]) -> None:
        """``model`` has just applied the decisions of history ``entry`` (one per hunk, each with its
        decision before) as revision ``model.revision``: move the counts from the revision before, if they
        were known, else forget them."""
        rev, hunks = self.counts_at
        if rev != model.revision - 1 or hunks is not model.hunks:
            self.forget()
            return
        c = dict(self.counts)
        for step in entry:
            high = model.hunk(step["id"]).max_severity == "high"
            for d, sign in ((Decision.from_dict(step["before"]), -1), (model.decision(step["id"]), 1)):
                c[d.state] += sign
                c["changed"] += sign * d.changed
                if d.state == "pending" and high:
                    c["high_pending"] += sign
        self.set_counts(model, c)

    def forget(self) -> None:
        self.counts_at, self.counts = (-1, None), {}

    def get_rules(self, model) -> list[str] | None:
        if self.rules_at[0] is model.hunks and self.rules_at[1] is model.untouched:
            return list(self.rules)
        return None

    def set_rules(self, model, rules: list[str]) -> None:
        self.rules_at, self.rules = (model.hunks, model.untouched), list(rules)
