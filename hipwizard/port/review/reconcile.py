"""When the sources change under a review: which files changed, and which decisions carry over.

Plain functions over a review's parts, used by ``ReviewState.changed_sources`` and ``ReviewState.reconcile``
(a re-run of ``hipwizard hipify`` over an existing review and the Port screen's re-read both end there):

- a hunk whose id (its file, context and text) is known keeps its decision, and a known split is made again;
- a hunk whose text changed since the user decided it (paired with the old hunk it replaces in the same file:
  same original lines, same translation, same surrounding lines, or overlapping line numbers) comes back pending, marked
  ``changed``, with the old decision kept in ``before`` so both faces can show it;
- a decided hunk that no longer exists is listed in ``vanished`` (never dropped silently); if a later run
  brings the same hunk back, its decision comes back with it;
- any other hunk is new: pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.port.model import Hunk
from hipwizard.port.review.file_format import Decision, fingerprint
from hipwizard.port.review.split import split_hunk
from hipwizard.port.translation.scan import Skip, read_bounded

VANISHED_LIMIT = 2000  # oldest entries go first past this (a review re-run many times over a churning tree)


@dataclass
class ReconcileReport:
    kept: int = 0  # decisions (not pending) that carried over with their unchanged hunk
    changed: int = 0  # decided hunks whose text changed: pending, with the old decision shown
    new: int = 0  # hunks not seen before: pending
    dropped: int = 0  # decided hunks that vanished (listed in the review's ``vanished``)
    changed_files: list[str] = field(default_factory=list)  # sources whose bytes (sha256) changed
    vanished: list[dict] = field(default_factory=list)  # the entries added to the review's ``vanished``

    def to_dict(self) -> dict:
        return {"kept": self.kept, "changed": self.changed, "new": self.new, "vanished": len(self.vanished),
                "changed_files": self.changed_files,
                "vanished_hunks": [{k: v[k] for k in ("file", "old_start", "decision")} for v in self.vanished]}


def changed_files(src: Path, files: dict[str, dict]) -> list[str]:
    """Files (``{rel: {"sha256": ...}}``) whose source bytes under ``src`` differ from the fingerprint,
    or vanished."""
    out = []
    for rel, info in files.items():
        try:
            raw = read_bounded(src / rel, 1 << 40)  # a FIFO or a device put in its place is never read
        except (OSError, Skip):
            out.append(rel)
            continue
        if fingerprint(raw) != info.get("sha256"):
            out.append(rel)
    return out


def _matters(d: Decision | None) -> bool:
    """A decision worth carrying: one the user made, or one still waiting to be re-made (``before``)."""
    return d is not None and (d.state != "pending" or d.before is not None)


def _earlier(d: Decision) -> dict:
    return d.to_dict() if d.state != "pending" else dict(d.before or {})


def _overlaps(a: Hunk, b: Hunk) -> bool:
    a0, a1 = a.old_start, a.old_start + max(len(a.old_lines), 1)
    b0, b1 = b.old_start, b.old_start + max(len(b.old_lines), 1)
    return a0 < b1 and b0 < a1


def _pair(new: Hunk, candidates: list[Hunk]) -> Hunk | None:
    """The old hunk ``new`` replaces: same original lines, else same translation, else the same lines around
    it (after, then before: lines added or removed above shift the numbers), else overlapping line numbers."""
    for same in (lambda o: o.old_lines == new.old_lines, lambda o: o.new_lines == new.new_lines,
                 lambda o: bool(new.context_after) and o.context_after == new.context_after,
                 lambda o: bool(new.context_before) and o.context_before == new.context_before,
                 lambda o: _overlaps(o, new)):
        for o in candidates:
            if same(o):
                return o
    return None


def vanished_entry(h: Hunk, d: Decision) -> dict:
    return {"id": h.hunk_id, "file": h.file, "old_start": h.old_start, "old_lines": h.old_lines,
            "new_lines": h.new_lines, "decision": _earlier(d)}


def carry_over(new_hunks: list[Hunk], old_hunks: list[Hunk], old_decisions: dict[str, Decision],
               old_splits: dict[str, dict], vanished: Sequence[dict] = ()
               ) -> tuple[list[Hunk], dict[str, Decision], dict[str, dict], list[dict], ReconcileReport]:
    """The hunks of a fresh translation with the old review's splits made again, their decisions (kept,
    pending and ``changed`` with the old one in ``before``, or new), the review's new ``vanished`` list,
    and the counts. ``vanished`` is the review's list so far: a hunk in it that comes back is decided again."""
    report = ReconcileReport()
    splits: dict[str, dict] = {}
    hunks: list[Hunk] = []
    for h in new_hunks:
        if h.hunk_id in old_splits:
            children = split_hunk(h)
            splits[h.hunk_id] = {"hunk": h.to_dict(), "children": [c.hunk_id for c in children]}
            hunks.extend(children)
        else:
            hunks.append(h)
    came_back = {v["id"]: v for v in vanished}
    new_ids = {h.hunk_id for h in hunks}
    # Old decided hunks with no hunk of the same id now: each is paired with the hunk that replaced it, or vanishes.
    unpaired: dict[str, list[Hunk]] = {}
    for o in old_hunks:
        if o.hunk_id not in new_ids and _matters(old_decisions.get(o.hunk_id)):
            unpaired.setdefault(o.file, []).append(o)
    decisions: dict[str, Decision] = {}
    for h in hunks:
        if h.hunk_id in old_decisions:
            decisions[h.hunk_id] = old_decisions[h.hunk_id]
            report.kept += _matters(decisions[h.hunk_id])
        elif h.hunk_id in came_back:
            decisions[h.hunk_id] = Decision.from_dict(came_back.pop(h.hunk_id)["decision"])
            report.kept += 1
        elif (old := _pair(h, unpaired.get(h.file, []))) is not None:
            unpaired[h.file].remove(old)
            decisions[h.hunk_id] = Decision(changed=True, before=_earlier(old_decisions[old.hunk_id]))
            report.changed += 1
        else:
            decisions[h.hunk_id] = Decision()
            report.new += 1
    report.vanished = [vanished_entry(o, old_decisions[o.hunk_id]) for olds in unpaired.values() for o in olds]
    report.dropped = len(report.vanished)
    still = [v for v in vanished if v["id"] in came_back] + report.vanished
    return hunks, decisions, splits, still[-VANISHED_LIMIT:], report
