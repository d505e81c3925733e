"""When the sources change under a review: which files changed, and which decisions carry over.

Plain functions over a review's parts, used by ``ReviewState.changed_sources`` and ``ReviewState.reconcile``:
a hunk whose id (its file, context and text) is known keeps its decision, and a known split is made again;
any other hunk comes back pending, marked ``changed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.port.model import Hunk
from hipwizard.port.review_format import Decision, fingerprint
from hipwizard.port.split import split_hunk


@dataclass
class ReconcileReport:
    kept: int = 0
    changed: int = 0
    dropped: int = 0
    changed_files: list[str] = field(default_factory=list)


def changed_files(src: Path, files: dict[str, dict]) -> list[str]:
    """Files (``{rel: {"sha256": ...}}``) whose source bytes under ``src`` differ from the fingerprint,
    or vanished."""
    out = []
    for rel, info in files.items():
        try:
            raw = (src / rel).read_bytes()
        except OSError:
            out.append(rel)
            continue
        if fingerprint(raw) != info.get("sha256"):
            out.append(rel)
    return out


def carry_over(new_hunks: list[Hunk], old_ids: set[str], old_decisions: dict[str, Decision],
               old_splits: dict[str, dict]) -> tuple[list[Hunk], dict[str, Decision], dict[str, dict], ReconcileReport]:
    """The hunks of a fresh translation with the old review's splits made again, their decisions (kept, or
    pending and ``changed``) and the counts."""
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
    decisions: dict[str, Decision] = {}
    for h in hunks:
        if h.hunk_id in old_decisions:
            decisions[h.hunk_id] = old_decisions[h.hunk_id]
            report.kept += 1
        else:
            decisions[h.hunk_id] = Decision(changed=True)
            report.changed += 1
    report.dropped = len(old_ids - {h.hunk_id for h in hunks})
    return hunks, decisions, splits, report
