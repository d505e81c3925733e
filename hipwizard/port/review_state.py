"""The review state: what the user decided about each hunk of a migration, saved after every change.

The state lives in one JSON file beside the output directory (``<out>.review.json`` next to ``<out>``):
readable, with a ``version`` field, one hunk and one decision per line so a team can commit it and review
in turns. Every change (decision, edit, split, undo) is appended at once, fsync'd, to a journal beside it
(``review_journal``), so ``kill -9`` loses at most the keystroke in flight; the state file itself is
rewritten atomically (temp file, fsync, rename) from memory on ``save``/``compact`` (open, exit, every few
hundred changes) and always reads back with the journal applied.

Risks on lines the translation left unchanged (``untouched``: file -> ``UntouchedRisk`` list) are kept
per file, files without hunks included: nothing to decide about them, but a manual edit to make.
Version 1 files (before ``untouched``) still load; ``needs_untouched`` tells the caller to fill them in
from a fresh translation (``services.refresh`` does).

Decisions per hunk id: ``pending`` (keep the original), ``accepted`` (take the translation), ``rejected``
(keep the original, on purpose), ``edited`` (take the user's edited translation). Source fingerprints
(sha256 of each original file) tell when the sources changed; ``reconcile`` then keeps the decisions of
hunks whose text still matches and brings the others back pending, marked ``changed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.port import review_format, review_journal
from hipwizard.port.model import Diagnostic, FileTranslation, Hunk, UntouchedRisk
from hipwizard.port.review_format import (DECIDED, REVIEW_VERSION, Decision, DecisionState, fingerprint,
                                          state_path_for)
from hipwizard.port.review_queries import API_KINDS, ReviewQueries
from hipwizard.port.review_reconcile import ReconcileReport, changed_files, carry_over
from hipwizard.port.scan import encode_source
from hipwizard.port.split import split_hunk
from hipwizard.port.worktree import remove_temps

__all__ = ["DECIDED", "REVIEW_VERSION", "Decision", "DecisionState", "ReconcileReport", "ReviewState",
           "fingerprint", "state_path_for"]

HISTORY_LIMIT = 500


class ReviewState(ReviewQueries):
    """Hunks of a migration in file order, a decision per hunk id, splits, and an undo history."""

    def __init__(self, path: Path, src: Path, out: Path, *, backend: str = "", files: dict | None = None,
                 hunks: Iterable[Hunk] = (), decisions: dict[str, Decision] | None = None,
                 splits: dict | None = None, history: list | None = None, revision: int = 0,
                 last_write: dict | None = None, untouched: dict[str, tuple[UntouchedRisk, ...]] | None = None,
                 diagnostics: dict[str, tuple[Diagnostic, ...]] | None = None, hip_version: str = "",
                 vanished: list[dict] | None = None) -> None:
        self.path = Path(path)
        self.src = Path(src)
        self.out = Path(out)
        self.backend = backend
        self.files: dict[str, dict] = files or {}
        self.decisions: dict[str, Decision] = decisions or {}
        self.splits: dict[str, dict] = splits or {}  # parent id -> {"hunk": parent dict, "children": [ids]}
        self.history: list[list[dict]] = history or []
        self.revision = revision
        self.last_write = last_write
        self.untouched: dict[str, tuple[UntouchedRisk, ...]] = untouched or {}
        self.needs_untouched = False  # loaded from a version 1 file: untouched risks not computed yet
        # APIs the translator reported per file (kinds in API_KINDS), checked against HIP ``hip_version``.
        self.diagnostics: dict[str, tuple[Diagnostic, ...]] = diagnostics or {}
        self.hip_version = hip_version
        self.vanished: list[dict] = vanished or []  # decided hunks a re-translation no longer made (review_reconcile)
        self._writer = review_format.Writer()
        self._counts: tuple[int, list | None, dict] = (-1, None, {})
        self._journal_entries = 0  # changes in the journal, not yet in the state file
        self._on_disk: Path | None = None  # the state file this journal belongs to (written or read)
        # Lines of the journal that could not be read on load (1-based), and where that journal was kept.
        self.journal_unreadable: list[int] = []
        self.journal_kept: Path | None = None
        self._set_hunks(list(hunks))

    # --- construction -------------------------------------------------------------------------------
    @classmethod
    def create(cls, src: str | Path, out: str | Path, translations: Iterable[FileTranslation], *,
               path: str | Path | None = None, hip_version: str | None = None) -> "ReviewState":
        """A fresh review of ``translations`` (every hunk pending), whose APIs were checked against HIP
        ``hip_version`` (None: not known). Not saved until ``save()``."""
        src_p, out_p = Path(src).expanduser().resolve(), Path(out).expanduser().resolve()
        state = cls(Path(path) if path else state_path_for(out_p), src_p, out_p, hip_version=hip_version or "")
        state._adopt(list(translations))
        for h in state.hunks:
            state.decisions.setdefault(h.hunk_id, Decision())
        return state

    @classmethod
    def load(cls, path: str | Path) -> "ReviewState":
        """Read a state file. A damaged or newer file raises ``UserError`` and is left as it is."""
        p = Path(path)
        data = review_format.read(p)
        try:
            state = cls(
                p, review_format.resolve_from_state(p, data["src"]),
                review_format.resolve_from_state(p, data["out"]), backend=data.get("backend", ""),
                files=data.get("files", {}), hunks=[Hunk.from_dict(h) for h in data.get("hunks", [])],
                decisions={k: Decision.from_dict(v) for k, v in data.get("decisions", {}).items()},
                splits=data.get("splits", {}), history=data.get("history", []),
                revision=int(data.get("revision", 0)), last_write=data.get("last_write"),
                untouched={f: tuple(UntouchedRisk.from_dict(r) for r in risks)
                           for f, risks in data.get("untouched", {}).items()},
                diagnostics={f: tuple(Diagnostic.from_dict(d) for d in diags)
                             for f, diags in (data.get("diagnostics") or {}).items()},
                hip_version=str(data.get("hip_version") or ""),
                vanished=review_format.check_vanished(data.get("vanished", [])),
            )
            review_format.check_paths(state.files, state.hunks)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise UserError(f"review state {p} is damaged ({why}); it was kept as it is") from None
        state._on_disk = p
        state.needs_untouched = data["version"] < 2
        try:
            state._replay()
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise UserError(f"review journal {state.journal} is damaged ({exc}); it was kept as it is") from None
        return state

    @property
    def journal(self) -> Path:
        return review_journal.journal_path(self.path)

    def _replay(self) -> None:
        """Apply the journal's changes made after the state file's revision (see ``review_journal``)."""
        entries, self.journal_unreadable = review_journal.read_all(self.journal)
        for entry in entries:
            if entry["rev"] <= self.revision:
                continue  # already in the state file (compacted before the journal was removed)
            if entry["rev"] != self.revision + 1:
                lost = (f"; {review_journal.describe(self.journal_unreadable, self.journal)}"
                        if self.journal_unreadable else "")
                raise ValueError(f"revision {entry['rev']} follows {self.revision}{lost}")
            self._apply(entry)
            del self.history[:-HISTORY_LIMIT]
            self.revision = entry["rev"]
            self._journal_entries += 1

    def _set_hunks(self, hunks: list[Hunk]) -> None:
        self.hunks = hunks
        self.index_of = {h.hunk_id: i for i, h in enumerate(hunks)}
        self.by_file: dict[str, list[int]] = {}
        for i, h in enumerate(hunks):
            self.by_file.setdefault(h.file, []).append(i)

    def _adopt(self, translations: list[FileTranslation]) -> None:
        """Take the files and hunks of a translation (fingerprints from the original text)."""
        self.files = {}
        hunks: list[Hunk] = []
        for t in translations:
            self.backend = self.backend or t.backend
            raw = encode_source(t.original)
            self.files[t.path] = {"sha256": fingerprint(raw), "hunks": len(t.hunks)}
            hunks.extend(sorted(t.hunks, key=lambda h: h.old_start))
        self.set_untouched(translations)
        self.set_diagnostics(translations, self.hip_version)
        self._set_hunks(hunks)

    def set_untouched(self, translations: Iterable[FileTranslation]) -> None:
        """Take the untouched-line risks of ``translations`` (files of this review only). Not saved."""
        self.untouched = {t.path: risks for t in translations if t.path in self.files
                          for risks in [UntouchedRisk.of(t)] if risks}
        self.needs_untouched = False

    def set_diagnostics(self, translations: Iterable[FileTranslation], hip_version: str | None) -> None:
        """Take the API diagnostics (unsupported, too new, removed) of ``translations``, checked against HIP
        ``hip_version``. Not saved."""
        self.hip_version = hip_version or ""
        self.diagnostics = {t.path: diags for t in translations if t.path in self.files
                            for diags in [tuple(d for d in t.diagnostics if d.kind in API_KINDS)] if diags}

    # --- saving ---------------------------------------------------------------------------------------
    def save(self) -> None:
        """Write the whole state atomically (the journal's changes included, so the journal goes).
        Raises ``OSError`` when the folder is not writable."""
        remove_temps(self.path)  # what a killed save left beside the state file
        atomic_write_text(self.path, self.to_json())
        if self.journal_unreadable and self.journal_kept is None and self.journal.exists():
            self.journal_kept = review_journal.keep_aside(self.journal, self.revision)
        review_journal.remove(self.journal)
        self._journal_entries = 0
        self._on_disk = self.path

    def compact(self) -> None:
        """Fold the journal into the state file, if there is one (on open and exit)."""
        if self._journal_entries or self.journal.exists():
            self.save()

    def to_json(self) -> str:
        return self._writer.to_json(self)

    # --- changing decisions (each saved at once, each undoable) -----------------------------------------
    def _commit(self, op: dict):
        """Apply ``op`` (a journal entry without its revision), then save it: a journal line, or the whole
        file every ``COMPACT_EVERY`` changes. If saving fails (``OSError``), memory is put back as it was,
        so what the screen shows is always what is on disk. Returns what ``_apply`` returns."""
        snapshot = (self.hunks, dict(self.decisions), dict(self.splits), list(self.history), self.revision)
        counted = self._counts
        try:
            result = self._apply(op)
            del self.history[:-HISTORY_LIMIT]
            self.revision += 1
            if op["op"] in ("decide", "edit") and counted[0] == self.revision - 1 and counted[1] is self.hunks:
                self._counts = (self.revision, self.hunks, self._recount(counted[2], self.history[-1]))
            if self._on_disk != self.path or self._journal_entries + 1 >= review_journal.COMPACT_EVERY:
                self.save()
            else:
                review_journal.append(self.journal, {"rev": self.revision, **op})
                self._journal_entries += 1
        except BaseException:
            hunks, self.decisions, self.splits, self.history, self.revision = snapshot
            self._set_hunks(hunks)
            self._counts = (-1, None, {})
            raise
        return result

    def _recount(self, counts: dict, entry: list[dict]) -> dict:
        """``counts`` after the decisions of history ``entry`` (one per hunk, with its state before): a
        keystroke costs O(hunks decided), not O(all hunks)."""
        c = dict(counts)
        for step in entry:
            h = self.hunk(step["id"])
            high = h.max_severity == "high"
            for d, sign in ((Decision.from_dict(step["before"]), -1), (self.decision(step["id"]), 1)):
                c[d.state] += sign
                c["changed"] += sign * d.changed
                if d.state == "pending" and high:
                    c["high_pending"] += sign
        return c

    def _apply(self, op: dict):
        """Make one change in memory (also used to replay the journal, so it must be deterministic)."""
        kind = op["op"]
        if kind in ("decide", "edit"):
            ids = op["ids"] if kind == "decide" else [op["id"]]
            entry = [{"op": "decide", "id": hid, "before": self.decision(hid).to_dict()} for hid in ids]
            for hid in ids:
                self.decisions[hid] = Decision(op["state"]) if kind == "decide" else Decision("edited", list(op["lines"]))
            self.history.append(entry)
            return ids
        if kind == "split":
            hunk_id = op["id"]
            parent = self.hunk(hunk_id)
            children = split_hunk(parent)
            before = self.decision(hunk_id)
            start = "pending" if before.state == "edited" else before.state
            i = self.index_of[hunk_id]
            self._set_hunks(self.hunks[:i] + children + self.hunks[i + 1:])
            self.splits[hunk_id] = {"hunk": parent.to_dict(), "children": [c.hunk_id for c in children]}
            self.decisions.pop(hunk_id, None)
            for c in children:
                self.decisions[c.hunk_id] = Decision(start)
            self.history.append([{"op": "split", "id": hunk_id, "before": before.to_dict()}])
            return children
        if kind == "undo":
            touched = []
            entry = self.history.pop()
            for step in reversed(entry):
                hid = step["id"]
                if step["op"] == "split":
                    self._unsplit(hid)
                self.decisions[hid] = Decision.from_dict(step["before"])
                touched.append(hid)
            return touched
        raise ValueError(f"unknown change {kind!r}")

    def decide(self, hunk_ids: Iterable[str], state: DecisionState, *, only_pending: bool = False) -> list[str]:
        """Set ``state`` on the hunks; returns the ids that changed. One undo step for the whole batch."""
        ids = []
        for hid in hunk_ids:
            old = self.decision(hid)
            if (only_pending and old.state != "pending") or (old.state == state and not old.changed):
                continue
            ids.append(hid)
        if not ids:
            return []
        return self._commit({"op": "decide", "ids": ids, "state": state})

    def edit(self, hunk_id: str, lines: list[str]) -> None:
        """Keep the user's own translated side for this hunk (it is applied like an accepted hunk)."""
        self._commit({"op": "edit", "id": hunk_id, "lines": list(lines)})

    def split(self, hunk_id: str) -> list[Hunk]:
        """Split a hunk in place; returns its children (``[]`` when it cannot be split). Children start
        with the parent's decision (an edited parent's children start pending: the edit no longer fits)."""
        if len(split_hunk(self.hunk(hunk_id))) <= 1:
            return []
        return self._commit({"op": "split", "id": hunk_id})

    def undo(self) -> list[str] | None:
        """Undo the last change; returns the hunk ids it touched, or None when there is nothing to undo."""
        if not self.history:
            return None
        return self._commit({"op": "undo"})

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
        self._set_hunks(kept)

    def record_write(self, files: int, compile_errors: int) -> None:
        """Remember that the decisions of this revision were written (the step is done when nothing pends)."""
        previous = self.last_write
        self.last_write = {"revision": self.revision, "files": files, "compile_errors": compile_errors}
        try:
            self.save()
        except OSError:
            self.last_write = previous
            raise

    # --- sources changed ------------------------------------------------------------------------------
    def changed_sources(self) -> list[str]:
        """Files of the review whose source bytes differ from the fingerprint (or vanished)."""
        return changed_files(self.src, self.files)

    def reconcile(self, translations: Iterable[FileTranslation], hip_version: str | None = None) -> ReconcileReport:
        """Adopt a fresh translation of the sources (its APIs checked against HIP ``hip_version``, else the
        review's), keeping what still matches (``review_reconcile.carry_over``). The undo history is
        cleared (it refers to hunks that may be gone). Saves."""
        old_decisions, old_splits, old_hunks, old_files = self.decisions, self.splits, self.hunks, dict(self.files)
        if hip_version:
            self.hip_version = hip_version
        translations = list(translations)
        self.backend = next((t.backend for t in translations), self.backend)
        self._adopt(translations)
        hunks, self.decisions, self.splits, self.vanished, report = carry_over(
            self.hunks, old_hunks, old_decisions, old_splits, self.vanished)
        report.changed_files = sorted({f for f, info in self.files.items()
                                       if old_files.get(f, {}).get("sha256") != info["sha256"]}
                                      | (set(old_files) - set(self.files)))
        self.history = []
        self._writer.forget_hunks()
        self._set_hunks(hunks)
        self.revision += 1
        self.save()
        return report
