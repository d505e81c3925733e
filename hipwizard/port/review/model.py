"""The review in memory: hunks in file order, a decision per hunk id, splits, an undo history, and
``apply(op)`` — the one way it changes.

An op is a plain dict, the same that the journal stores (``review_store``)::

    {"op": "decide", "ids": [ID, ...], "state": "accepted" | "rejected" | "pending"}
    {"op": "edit", "id": ID, "lines": [str, ...]}        # the user's own translated side
    {"op": "split", "id": ID}                            # into the children ``split.split_hunk`` makes
    {"op": "undo"}                                       # the last history entry

``apply`` does no I/O and depends on nothing but the model and the op, so replaying a journal's ops on the
model read from the state file gives back exactly the model that wrote them. Every op bumps ``revision``.
Reconciling with a fresh translation (``reconcile``) is the other change: it replaces the hunk list and
clears the history (see ``review_reconcile``).

Decisions per hunk id: ``pending`` (keep the original), ``accepted`` (take the translation), ``rejected``
(keep the original, on purpose), ``edited`` (take the user's edited translation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hipwizard.port.model import Diagnostic, FileTranslation, Hunk, UntouchedRisk
from hipwizard.port.review.file_format import Decision, fingerprint
from hipwizard.port.review.memo import ReviewMemo
from hipwizard.port.review.queries import API_KINDS, ReviewQueries
from hipwizard.port.review.reconcile import ReconcileReport, carry_over, changed_files
from hipwizard.port.review.split import split_hunk
from hipwizard.port.translation.scan import encode_source

HISTORY_LIMIT = 500


@dataclass(frozen=True)
class WriteRecord:
    """The review's last write (``last_write`` in its file): the revision whose decisions were written, how
    many files, and the compile check's outcome with the arch it really used (after a fallback, e.g. gfx940
    for a hipcc without gfx942, not the one asked for; "" when nothing was compiled) and its note."""

    revision: int
    files: int
    compile_errors: int = 0
    arch: str = ""
    check_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> WriteRecord | None:
        """The record, or None for none or a damaged one; files written before ``arch``/``check_note`` load
        with them empty."""
        if not isinstance(data, dict):
            return None

        def whole(key: str) -> int | None:
            v = data.get(key, 0)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        revision, files, errors = whole("revision"), whole("files"), whole("compile_errors")
        if revision is None or files is None or errors is None:
            return None
        arch, note = data.get("arch"), data.get("check_note")
        return cls(revision, files, errors, arch if isinstance(arch, str) else "", note if isinstance(note, str) else "")


class ReviewModel(ReviewQueries):
    """What a review holds. ``src``/``out`` are absolute; the file format keeps them relative."""

    def __init__(self, src: Path, out: Path, *, backend: str = "", files: dict | None = None,
                 hunks: Iterable[Hunk] = (), decisions: dict[str, Decision] | None = None,
                 splits: dict | None = None, history: list | None = None, revision: int = 0,
                 last_write: WriteRecord | None = None, untouched: dict[str, tuple[UntouchedRisk, ...]] | None = None,
                 diagnostics: dict[str, tuple[Diagnostic, ...]] | None = None, hip_version: str = "",
                 vanished: list[dict] | None = None, needs_untouched: bool = False,
                 environment: dict | None = None) -> None:
        self.src = Path(src)
        self.out = Path(out)
        self.backend = backend
        self.files: dict[str, dict] = files or {}  # path -> {"sha256": of the original, "hunks": N}
        self.decisions: dict[str, Decision] = decisions or {}
        self.splits: dict[str, dict] = splits or {}  # parent id -> {"hunk": parent dict, "children": [ids]}
        self.history: list[list[dict]] = history or []
        self.revision = revision
        self.last_write = last_write
        # Risks on lines the translation left unchanged, per file: nothing to decide, a manual edit to make.
        self.untouched: dict[str, tuple[UntouchedRisk, ...]] = untouched or {}
        self.needs_untouched = needs_untouched  # read from a version 1 file: untouched risks not computed yet
        # APIs the translator reported per file (kinds in API_KINDS), checked against HIP ``hip_version``.
        self.diagnostics: dict[str, tuple[Diagnostic, ...]] = diagnostics or {}
        self.hip_version = hip_version
        self.vanished: list[dict] = vanished or []  # decided hunks a re-translation no longer made
        self.environment = environment  # the doctor's fingerprint of the machine it was translated on
        self.memo = ReviewMemo()
        self.set_hunks(list(hunks))

    def set_hunks(self, hunks: list[Hunk]) -> None:
        """Replace the hunk list (never mutated in place: the memo and the file writer rely on it)."""
        self.hunks = hunks
        self.index_of = {h.hunk_id: i for i, h in enumerate(hunks)}
        self.by_file: dict[str, list[int]] = {}
        for i, h in enumerate(hunks):
            self.by_file.setdefault(h.file, []).append(i)

    # --- taking a translation --------------------------------------------------------------------------
    def adopt(self, translations: list[FileTranslation]) -> None:
        """Take the files and hunks of a translation (fingerprints from the original text)."""
        self.files = {}
        hunks: list[Hunk] = []
        for t in translations:
            self.backend = self.backend or t.backend
            self.files[t.path] = {"sha256": fingerprint(encode_source(t.original)), "hunks": len(t.hunks)}
            hunks.extend(sorted(t.hunks, key=lambda h: h.old_start))
        self.set_untouched(translations)
        self.set_diagnostics(translations, self.hip_version)
        self.set_hunks(hunks)

    def set_untouched(self, translations: Iterable[FileTranslation]) -> None:
        """Take the untouched-line risks of ``translations`` (files of this review only)."""
        self.untouched = {t.path: risks for t in translations if t.path in self.files
                          for risks in [UntouchedRisk.of(t)] if risks}
        self.needs_untouched = False

    def set_diagnostics(self, translations: Iterable[FileTranslation], hip_version: str | None) -> None:
        """Take the API diagnostics (unsupported, too new, removed) of ``translations``, checked against HIP
        ``hip_version``."""
        self.hip_version = hip_version or ""
        self.diagnostics = {t.path: diags for t in translations if t.path in self.files
                            for diags in [tuple(d for d in t.diagnostics if d.kind in API_KINDS)] if diags}

    def reconcile(self, translations: Iterable[FileTranslation], hip_version: str | None = None) -> ReconcileReport:
        """Adopt a fresh translation of the sources (its APIs checked against HIP ``hip_version``, else the
        review's), keeping what still matches (``review_reconcile.carry_over``). The undo history is
        cleared (it refers to hunks that may be gone); the revision is bumped."""
        old_decisions, old_splits, old_hunks, old_files = self.decisions, self.splits, self.hunks, dict(self.files)
        if hip_version:
            self.hip_version = hip_version
        translations = list(translations)
        self.backend = next((t.backend for t in translations), self.backend)
        self.adopt(translations)
        hunks, self.decisions, self.splits, self.vanished, report = carry_over(
            self.hunks, old_hunks, old_decisions, old_splits, self.vanished)
        report.changed_files = sorted({f for f, info in self.files.items()
                                       if old_files.get(f, {}).get("sha256") != info["sha256"]}
                                      | (set(old_files) - set(self.files)))
        self.history = []
        self.set_hunks(hunks)
        self.revision += 1
        return report

    def changed_sources(self) -> list[str]:
        """Files of the review whose source bytes differ from the fingerprint (or vanished)."""
        return changed_files(self.src, self.files)

    # --- the one way decisions change --------------------------------------------------------------------
    def apply(self, op: dict):
        """Make one change (see the module doc) and bump the revision. Returns the ids it decided
        (``decide``/``edit``), the children (``split``) or the ids it touched (``undo``). Raises
        ``ValueError``/``KeyError``/``IndexError`` on an op that does not fit this model."""
        kind = op["op"]
        if kind in ("decide", "edit"):
            ids = list(op["ids"]) if kind == "decide" else [op["id"]]
            for hid in ids:
                self.hunk(hid)  # an unknown id is an error (KeyError), not a silent new decision
            entry = [{"op": "decide", "id": hid, "before": self.decision(hid).to_dict()} for hid in ids]
            for hid in ids:
                self.decisions[hid] = Decision(op["state"]) if kind == "decide" else Decision("edited", list(op["lines"]))
            self.history.append(entry)
            result = ids
        elif kind == "split":
            result = self._split(op["id"])
        elif kind == "undo":
            result = self._undo()
        else:
            raise ValueError(f"unknown change {kind!r}")
        del self.history[:-HISTORY_LIMIT]
        self.revision += 1
        if kind in ("decide", "edit"):
            self.memo.after_decide(self, self.history[-1])
        return result

    def _split(self, hunk_id: str) -> list[Hunk]:
        parent = self.hunk(hunk_id)
        children = split_hunk(parent)
        before = self.decision(hunk_id)
        start = "pending" if before.state == "edited" else before.state  # an edit no longer fits a child
        i = self.index_of[hunk_id]
        self.set_hunks(self.hunks[:i] + children + self.hunks[i + 1:])
        self.splits[hunk_id] = {"hunk": parent.to_dict(), "children": [c.hunk_id for c in children]}
        self.decisions.pop(hunk_id, None)
        for c in children:
            self.decisions[c.hunk_id] = Decision(start)
        self.history.append([{"op": "split", "id": hunk_id, "before": before.to_dict()}])
        return children

    def _undo(self) -> list[str]:
        touched = []
        for step in reversed(self.history.pop()):
            hid = step["id"]
            if step["op"] == "split":
                self._unsplit(hid)
            self.decisions[hid] = Decision.from_dict(step["before"])
            touched.append(hid)
        return touched

    def _unsplit(self, parent_id: str) -> None:
        info = self.splits.pop(parent_id)
        for c in info["children"]:
            if c in self.splits:  # a child split again: undo that first
                self._unsplit(c)
        children = set(info["children"])
        first = min(self.index_of[c] for c in children)
        kept = [h for h in self.hunks if h.hunk_id not in children]
        kept.insert(first, Hunk.from_dict(info["hunk"]))
        for c in children:
            self.decisions.pop(c, None)
        self.set_hunks(kept)

    # --- putting memory back when a change could not be saved ---------------------------------------------
    def snapshot(self) -> tuple:
        return self.hunks, dict(self.decisions), dict(self.splits), list(self.history), self.revision

    def restore(self, snap: tuple) -> None:
        hunks, self.decisions, self.splits, self.history, self.revision = snap
        self.set_hunks(hunks)
        self.memo.forget()
